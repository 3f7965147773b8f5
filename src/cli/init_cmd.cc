// `ootci init --device NAME [--dir PATH] [--force] [--ootci-wheel URL|PATH [--ootci-wheel-sha256
// HEX]] [--ootci-version V [--ootci-index-url URL]] [--ootci-deb-url URL --ootci-deb-sha256 HEX]
// [--ootci-repository URL [--ootci-ref REF]]`: scaffold a backend repository's CI.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/version.h"
#include "job/scaffold.h"

namespace ootci {
namespace {

struct InitArgs {
  std::string device;
  std::string dir = ".";
  bool force = false;
  OotciSource source;
};

void init(InitArgs a) {
  if (!a.source.index_url.empty() && a.source.version.empty()) a.source.version = kVersion;
  auto files = scaffold_files(a.device, a.source);
  for (const auto& path : write_scaffold(a.dir, files, a.force))
    std::cout << fmt::format("wrote {}\n", a.dir == "." ? path : a.dir + "/" + path);
  std::cout << "next steps: README.ootci.md\n";
}

}  // namespace

void add_init_commands(CLI::App& app) {
  static InitArgs args;
  auto* cmd = app.add_subcommand(
      "init", "Write a backend repository's CI: workflow, ootci.yaml, a starter test config");
  cmd->add_option("--device", args.device, "device name: [a-z0-9_-]+")->required();
  cmd->add_option("--dir", args.dir, "where to write (default: .)");
  cmd->add_flag("--force", args.force, "overwrite files that exist");
  cmd->add_option("--ootci-wheel", args.source.wheel,
                  "the runners pip install ootci from this wheel: a URL, or a path in the "
                  "repository");
  cmd->add_option("--ootci-wheel-sha256", args.source.wheel_sha256,
                  "the wheel's SHA-256 (64 hex digits; required with a URL)");
  cmd->add_option("--ootci-version", args.source.version,
                  "the runners pip install ootci==VERSION from --ootci-index-url");
  cmd->add_option("--ootci-index-url", args.source.index_url,
                  "the package index that serves ootci (default: pip's; the version defaults to "
                  "this ootci's)");
  cmd->add_option("--ootci-deb-url", args.source.deb_url,
                  "the runners install ootci from this release's ootci_<version>_amd64.deb");
  cmd->add_option("--ootci-deb-sha256", args.source.deb_sha256,
                  "that .deb's SHA-256 (64 hex digits; required with --ootci-deb-url)");
  cmd->add_option("--ootci-repository", args.source.repository,
                  "without a .deb: the runners build ootci from this git URL");
  cmd->add_option("--ootci-ref", args.source.ref,
                  "the branch, tag or commit of --ootci-repository (default: its default branch)");
  cmd->callback([] { init(args); });
}

}  // namespace ootci
