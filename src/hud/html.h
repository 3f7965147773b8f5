#pragma once
#include <string>
#include <string_view>

namespace ootci {

// Escapes text for HTML element content and quoted attribute values. Every value a downstream
// sends (job and workflow names, messages, URLs) goes through this before it reaches a page.
std::string esc(std::string_view text);
// Only http(s) links are rendered as links; anything else (javascript:, data:) becomes "#".
std::string safe_href(std::string_view url);

// The page frame: navigation, the stylesheet, no external resources.
std::string html_page(const std::string& title, const std::string& body);

}  // namespace ootci
