#pragma once
// The one edit `ootci relay sync-levels` makes to upstream's .github/allowlist.yml: an L3 repo
// moved to L2. The text is edited, not re-dumped from parsed YAML, so the PR's diff is the moved
// entry alone, its comments kept; the result is parsed back and refused unless it is exactly that
// change (as upstream's tools/torchci/crcr_sync_level.py does).
#include <string>

namespace ootci {

// `text` with `repo` moved from L3 to the end of L2: the entry and the comment lines directly
// above it leave their device group (the whole group goes, with its own comments, when nothing
// else is left in it), and `- repo` is appended to L2 at the indentation its items use, after
// those comments. L2 entries have no oncalls or device, so both are dropped; `events:` stay
// (`- repo: {events: [nightly]}`). Throws Error, naming `file` and the lines, when the file is
// not in a shape this edit can keep minimal: a section in flow style, a key written twice, the
// repo not at L3, or a result that changed more than the entry.
std::string demote_in_allowlist(const std::string& text, const std::string& repo,
                                const std::string& file = ".github/allowlist.yml");

}  // namespace ootci
