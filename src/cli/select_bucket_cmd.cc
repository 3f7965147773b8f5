// `ootci select propose|rebucket`: test-suite configs from execution evidence, and moves between
// buckets from a run of them (docs/select.md).
#include <iostream>

#include "adapt/propose.h"
#include "cli/commands.h"
#include "evidence/evidence_path.h"

namespace ootci {
namespace {

struct CommonArgs {
  std::string config, evidence, out;
  std::string dispatch_key = "PrivateUse1";
  std::string sources;
};

void add_common(CLI::App& cmd, CommonArgs& a) {
  cmd.add_option("--config", a.config, "ootci.yaml")->required();
  cmd.add_option("--out", a.out, "folder of the generated test-suite configs")->required();
  cmd.add_option("--evidence", a.evidence, "evidence database (default: the workspace's)");
  cmd.add_option("--dispatch-key", a.dispatch_key,
                 "the backend's dispatch key, for code evidence (default: PrivateUse1)");
  cmd.add_option("--sources", a.sources,
                 "the backend's sources, for code evidence (default: upstream.device_root)");
}

CapabilitySources sources_of(const CommonArgs& a, const BackendConfig& backend) {
  return {a.sources.empty() ? backend.device_root : a.sources, a.dispatch_key};
}

struct ProposeArgs : CommonArgs {
  std::vector<std::string> files;
  std::string variants;
  bool overwrite_human = false, dry_run = false, no_agent = false;
  size_t later_runs = 20;
};

struct RebucketArgs : CommonArgs {
  std::string run;
  bool write = false;
  int promote_after = 2;
};

}  // namespace

void add_select_bucket_commands(CLI::App& select) {
  static ProposeArgs p;
  auto* propose_cmd = select.add_subcommand(
      "propose", "Bucket every discovered variant and write one test-suite config per file");
  add_common(*propose_cmd, p);
  propose_cmd->add_option("--files", p.files,
                          "only these upstream files (globs on paths like test/test_view_ops.py)");
  propose_cmd->add_flag("--overwrite-human", p.overwrite_human,
                        "replace human-written entries too");
  propose_cmd->add_flag("--dry-run", p.dry_run, "print the changes, write nothing");
  propose_cmd->add_flag("--no-agent", p.no_agent, "do not consult select.agent_command");
  propose_cmd->add_option("--later-runs", p.later_runs,
                          "runs after the discovery that count as evidence (default: 20)");
  propose_cmd->add_option("--variants", p.variants,
                          "write how the proposed configs decide each variant (JSON) to this file");
  propose_cmd->callback([] {
    ProposeRequest r;
    r.backend = load_backend_or_exit(p.config);
    r.evidence_path = p.evidence.empty() ? evidence_path(r.backend) : p.evidence;
    r.out_dir = p.out;
    r.file_globs = p.files;
    r.overwrite_human = p.overwrite_human;
    r.dry_run = p.dry_run;
    r.use_agent = !p.no_agent;
    r.later_runs = p.later_runs;
    r.sources = sources_of(p, r.backend);
    r.variants_path = p.variants;
    if (int code = propose(r, std::cout, std::cerr)) throw ExitStatus{code};
  });

  static RebucketArgs b;
  auto* rebucket_cmd =
      select.add_subcommand("rebucket", "Propose bucket moves from a run of the current configs");
  add_common(*rebucket_cmd, b);
  rebucket_cmd->add_option("--run", b.run, "the run to learn from")->required();
  rebucket_cmd->add_flag("--write", b.write, "apply the moves to the configs in --out");
  rebucket_cmd
      ->add_option("--promote-after", b.promote_after,
                   "passes in a row (the run's included) before an xfail is promoted (default: 2)")
      ->check(CLI::Range(1, 100));
  rebucket_cmd->callback([] {
    RebucketRequest r;
    r.backend = load_backend_or_exit(b.config);
    r.evidence_path = b.evidence.empty() ? evidence_path(r.backend) : b.evidence;
    r.run_id = b.run;
    r.out_dir = b.out;
    r.write = b.write;
    r.promote_after = b.promote_after;
    r.sources = sources_of(b, r.backend);
    if (int code = rebucket(r, std::cout, std::cerr)) throw ExitStatus{code};
  });
}

}  // namespace ootci
