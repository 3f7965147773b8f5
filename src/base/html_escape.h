#pragma once
// Text and links for HTML pages (the HUD, the run report).
#include <string>
#include <string_view>

namespace ootci {

// Escapes text for HTML element content and quoted attribute values. Every value a downstream
// sends (job and workflow names, test names, messages, URLs) goes through this before it reaches
// a page.
std::string esc(std::string_view text);
// Only http(s) links are rendered as links; anything else (javascript:, data:) becomes "#".
std::string safe_href(std::string_view url);

// The Content-Security-Policy of every page ootci serves or writes (HUD, run report, device
// page): nothing loads but the page's own inline style and data: images, and no script runs.
inline constexpr const char* kPagePolicy =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

}  // namespace ootci
