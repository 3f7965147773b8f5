// `ootci select delta`: the upstream tests that are new or changed between two versions of the
// test suite, so an upgrade re-evaluates only those (docs/select.md).
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/scratch_dir.h"
#include "cli/commands.h"
#include "plan/path_glob.h"
#include "select/test_hashes.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

struct DeltaArgs {
  std::string from, to;
  std::string repo;
  std::vector<std::string> files;
  std::string config;
  std::string output;
};

// The relpaths the globs match in either tree (every test/**/test_*.py when there are none).
std::vector<std::string> matching_files(const std::vector<std::string>& globs,
                                        const std::vector<std::string>& roots) {
  std::set<std::string> out;
  for (const auto& glob : globs) {
    if (fs::path(glob).is_absolute())
      throw Error(fmt::format("--files {}: give a path relative to the trees", glob));
    for (const auto& root : roots)
      for (const auto& p : expand_glob(root + "/" + glob))
        if (fs::is_regular_file(p)) out.insert(fs::relative(p, root).string());
  }
  if (!globs.empty() && out.empty()) throw Error("--files: no file matches in either tree");
  return {out.begin(), out.end()};
}

std::string file_line(const FileDelta& f) {
  return fmt::format("{}: {} new, {} changed{}, {} removed, {} unchanged", f.relpath, f.added,
                     f.changed, f.helpers_changed ? " (file-level helpers changed)" : "", f.removed,
                     f.unchanged);
}

void delta_command(const DeltaArgs& a) {
  std::string python = "/usr/bin/python3";
  if (!a.config.empty()) python = load_backend_or_exit(a.config).python;
  ScratchDir scratch("delta");
  std::string from = a.from, to = a.to;
  if (!a.repo.empty()) {
    from = scratch.path() + "/from";
    to = scratch.path() + "/to";
    export_git_tests(a.repo, a.from, from);
    export_git_tests(a.repo, a.to, to);
  } else {
    for (const auto& dir : {from, to})
      if (!fs::is_directory(dir + "/test"))
        throw Error(
            fmt::format("{}: no test/ folder (give upstream trees, or --repo with "
                        "revisions)",
                        dir));
  }
  std::vector<std::string> files = matching_files(a.files, {from, to});
  TreeHashes before = hash_test_tree(python, from, files, scratch.path() + "/hash-from");
  TreeHashes after = hash_test_tree(python, to, files, scratch.path() + "/hash-to");
  TestDelta delta = compare_trees(before, after);

  size_t unchanged_files = 0;
  for (const auto& f : delta.files) {
    if (f.any_change())
      std::cout << file_line(f) << "\n";
    else
      ++unchanged_files;
  }
  for (const auto& [where, error] : delta.errors)
    std::cout << fmt::format("not compared: {}: {}\n", where, error);
  std::cout << fmt::format(
      "total: {} new, {} changed, {} removed, {} unchanged tests ({} of {} files changed)\n",
      delta.added, delta.changed, delta.removed_count, delta.unchanged,
      delta.files.size() - unchanged_files, delta.files.size());
  std::cout << fmt::format("to evaluate: {} tests (new and changed)\n", delta.reasons.size());
  if (!a.output.empty()) {
    write_file_atomically(a.output, delta_selection(delta).dump(2) + "\n");
    std::cout << fmt::format("selection: {}\n", a.output);
  }
}

}  // namespace

void add_select_delta_commands(CLI::App& select) {
  static DeltaArgs args;
  auto* cmd = select.add_subcommand(
      "delta",
      "Count the upstream tests that are new, changed or removed between two versions "
      "of the test suite, and select the new and changed ones");
  cmd->add_option("--from", args.from, "the old upstream tree (holding test/), or a revision")
      ->required();
  cmd->add_option("--to", args.to, "the new upstream tree, or a revision")->required();
  cmd->add_option("--repo", args.repo, "a PyTorch git checkout: --from and --to are revisions");
  cmd->add_option("--files", args.files,
                  "test files or globs relative to the trees (default: test/**/test_*.py)");
  cmd->add_option("--config", args.config, "ootci.yaml (for backend.python)");
  cmd->add_option("-o,--output", args.output,
                  "selection JSON for `ootci run --select` (bases of new and changed tests)");
  cmd->callback([] { delta_command(args); });
}

}  // namespace ootci
