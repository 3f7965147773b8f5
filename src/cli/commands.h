#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "plan/backend_config.h"

namespace ootci {

// Each subcommand file adds itself to the app; main.cc only calls these.
void add_relay_commands(CLI::App& app);
void add_plan_commands(CLI::App& app);
void add_evidence_commands(CLI::App& app);
void add_shards_commands(CLI::App& app);
void add_run_commands(CLI::App& app);
void add_gate_commands(CLI::App& app);
void add_report_commands(CLI::App& app);
void add_agent_commands(CLI::App& app);
void add_init_commands(CLI::App& app);
void add_discover_commands(CLI::App& app);
void add_select_commands(CLI::App& app);
void add_attribute_commands(CLI::App& app);
void add_chroot_commands(CLI::App& app);
// Under `ootci select`: propose and rebucket; changed; delta; wave2.
void add_select_bucket_commands(CLI::App& select);
void add_select_changed_commands(CLI::App& select);
void add_select_delta_commands(CLI::App& select);
void add_select_wave2_commands(CLI::App& select);

// Thrown by a command that has already told the user what went wrong (for example every error
// of `ootci plan check`), so main exits with `code` and prints nothing more.
struct ExitStatus {
  int code;
};

// The ootci.yaml at `path`; on errors, prints each (file:line:col: path: message) and exits 1.
BackendConfig load_backend_or_exit(const std::string& path);

// --isolation fork|spawn (run, discover, attribute): stored in `into`, empty when not given; the
// command then sets run.isolation from it.
void add_isolation_option(CLI::App* cmd, std::string& into);

// The client_payload in `path` (`ootci gate --payload`, `ootci report --payload`): what
// toJSON(github.event.client_payload) writes, or a whole repository_dispatch body
// {"event_type": ..., "client_payload": {...}} around it. Errors name the file.
nlohmann::json read_client_payload(const std::string& path);

}  // namespace ootci
