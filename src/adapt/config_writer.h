#pragma once
// Writing proposed buckets into Spyre-format test-suite configs, one per upstream file, without
// touching what people wrote (docs/select.md, "Config files"). An entry right under a
// `# ootci: <reason>` comment (continued on comment lines indented under the reason) is ootci's and
// is regenerated; every other entry is human-written and kept verbatim, and the methods it names
// are left out of the generated entries.
#include <optional>
#include <string>
#include <vector>

#include "adapt/decisions.h"
#include "plan/suite_config.h"

namespace ootci {

// A config file's text cut into what ootci rewrites and what it keeps. The file holds one
// upstream file entry whose `tests:` is a block list (the layout ootci writes; human edits in
// standard YAML block style keep it).
struct ConfigLayout {
  struct Entry {
    std::vector<std::string> lines;  // leading comments and blank lines, then the item
    size_t leading = 0;              // how many of the lines lead
    int first_line = 0;              // 1-based line of the item's "-"
    int last_line = 0;               // 1-based last line of the item
    bool generated = false;          // its leading comments hold `# ootci: <reason>`
    std::string reason;              // that reason, its continuation lines joined
  };
  std::vector<std::string> head;  // lines before `tests:`
  std::string tests_line;         // the `tests:` line, without an inline value
  std::string item_indent;        // the indentation of the list's dashes
  std::vector<Entry> entries;
  std::vector<std::string> tail;  // after the last item: comments, then the rest (global: ...)
};

// Throws Error naming the file (and line) when the text has no single block `tests:` list.
ConfigLayout split_config(const std::string& name, const std::string& text);

// An existing config as ootci reads it before rewriting it.
struct ExistingConfig {
  std::string path;
  ConfigLayout layout;
  std::vector<NameDecision> generated;  // names of `# ootci:` entries, in file order
  std::vector<Rule> human_rules;        // names of human-written entries
  size_t human_entries = 0;
  std::vector<std::string> labels;  // test_suite_config.labels as written ([] when absent)
};
// Reads and validates the file with the suite config parser, ootci's entries and people's each on
// their own (a person may name a test an ootci entry names too: the rewrite drops ootci's); throws
// Error with every parser error when it is invalid, since rewriting it could lose what a person
// meant.
ExistingConfig read_existing_config(const std::string& path);

// "test/test_view_ops.py" -> "test_view_ops.yaml"; "test/nn/test_x.py" -> "nn.test_x.yaml".
std::string config_file_name(const std::string& relpath);

// The config text: the existing file's head and tail (or a new file's, with `labels`), one entry
// per group of names with the same mode, edits and reason, each under `# ootci: <reason>` and, for
// modes other than mandatory_success, a short reason on its mode line; dtype-restricted entries
// before unrestricted ones (Spyre then picks them for their dtypes), groups in mode order then by
// their sorted names; then the human-written entries as they were (dropped, with their names
// regenerated, when `overwrite_human`). Decisions a human entry covers must already be left out
// (without_human).
std::string render_config(const std::string& relpath, const std::vector<std::string>& labels,
                          const std::vector<NameDecision>& decisions,
                          const ExistingConfig* existing, bool overwrite_human);

// The decisions no human-written rule covers.
std::vector<NameDecision> without_human(const std::vector<NameDecision>& decisions,
                                        const std::vector<Rule>& human_rules);

// How many entries the decisions make.
size_t entry_count(const std::vector<NameDecision>& decisions);

// "TestX::test_a", or "TestX::test_a [complex128]" for a dtype-restricted entry's name: how a
// change to it is printed, and what tells the two entries of one method apart.
std::string display_name(const NameDecision& d);

// What a rewrite changes, name by name (display names compared).
struct NameChange {
  std::string name;
  std::optional<NameDecision> before, after;
};
struct ConfigDiff {
  std::vector<NameChange> added, changed, removed;
  bool empty() const { return added.empty() && changed.empty() && removed.empty(); }
};
ConfigDiff diff_decisions(const std::vector<NameDecision>& before,
                          const std::vector<NameDecision>& after);

}  // namespace ootci
