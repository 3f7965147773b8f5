// `ootci select changed`: the tests a backend or upstream commit range can break, with the reason
// for each, as a selection for `ootci run --select` (docs/select.md).
#include <fmt/format.h>

#include <iostream>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "evidence/evidence_path.h"
#include "select/budget.h"
#include "select/changed.h"

namespace ootci {
namespace {

struct ChangedArgs {
  std::string config;
  std::string backend_range, upstream_range;
  std::string backend_repo, upstream_repo;
  std::string dispatch_key = "PrivateUse1";
  std::string evidence;
  std::string output;
  std::string budget;
  bool ignore_dtypes = false;
  bool own_calls_only = false;
  bool staged = false;
};

void changed_command(const ChangedArgs& a) {
  ChangedRequest req;
  req.backend = load_backend_or_exit(a.config);
  req.evidence_path = a.evidence.empty() ? evidence_path(req.backend) : a.evidence;
  req.backend_range = a.backend_range;
  req.upstream_range = a.upstream_range;
  req.backend_repo = a.backend_repo;
  req.upstream_repo = a.upstream_repo;
  req.dispatch_key = a.dispatch_key;
  req.options.ignore_dtypes = a.ignore_dtypes;
  req.options.own_calls_only = a.own_calls_only;
  req.options.staged = a.staged;
  if (!a.budget.empty()) req.budget = parse_budget(a.budget);
  ChangedSelection selection = select_changed(req);
  write_file_atomically(a.output, selection.to_json().dump(2) + "\n");
  std::cout << format_changed_summary(selection) << fmt::format("selection: {}\n", a.output);
}

}  // namespace

void add_select_changed_commands(CLI::App& select) {
  static ChangedArgs args;
  auto* cmd = select.add_subcommand(
      "changed", "Select the tests a backend or upstream commit range can break, with reasons");
  cmd->add_option("--config", args.config, "ootci.yaml")->required();
  cmd->add_option("--backend", args.backend_range,
                  "backend commits FROM..TO (FROM alone: FROM..HEAD)");
  cmd->add_option("--upstream", args.upstream_range,
                  "upstream PyTorch commits FROM..TO (FROM alone: FROM..HEAD)");
  cmd->add_option("--backend-repo", args.backend_repo,
                  "backend git checkout (default: upstream.device_root)");
  cmd->add_option("--upstream-repo", args.upstream_repo,
                  "PyTorch git checkout (default: upstream.torch_root)");
  cmd->add_option("--dispatch-key", args.dispatch_key,
                  "the backend's dispatch key (default: PrivateUse1)");
  cmd->add_option("--evidence", args.evidence, "evidence database (default: workspace)");
  cmd->add_option("-o,--output", args.output, "selection JSON to write")->required();
  cmd->add_option("--budget", args.budget,
                  "keep the tests with the strongest evidence within this share of the full "
                  "plan's test time, e.g. 10% (default: everything the evidence reaches)");
  cmd->add_flag("--ignore-dtypes", args.ignore_dtypes,
                "select by op alone, ignoring the dtypes of changes and evidence (to compare)");
  cmd->add_flag("--own-calls-only", args.own_calls_only,
                "leave out tests that reached a changed op only while generating their inputs "
                "(make_tensor, sample inputs)");
  cmd->add_flag("--staged", args.staged,
                "run those tests in a second stage, only when the first stage shows the change "
                "raising (ootci run reads \"then\")")
      ->excludes("--own-calls-only")
      ->excludes("--budget");
  cmd->callback([] { changed_command(args); });
}

}  // namespace ootci
