#pragma once
// What `ootci run --select FILE` runs (docs/run.md, "Selection"), and a staged selection's waves.
#include <set>
#include <string>

namespace ootci {

// What to run: whole files, single tests (ids), and every variant of a config name ("bases",
// relpath::Class::method, e.g. from `ootci select delta`), from `--select FILE` (docs/run.md).
// "then" (from `ootci select changed --staged`): tests run afterwards in the same run, only when
// the first stage's results call for it (second_stage_reason).
struct Selection {
  std::set<std::string> files;  // relpaths
  std::set<std::string> tests;  // test ids
  std::set<std::string> bases;  // relpath::Class::method (or relpath::method)
  std::set<std::string> then_tests;
};
Selection load_selection(const std::string& path);

}  // namespace ootci
