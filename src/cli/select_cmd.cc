// `ootci select propose|rebucket|changed|delta|wave2` (docs/select.md). Each subcommand lives in
// its own file; this one only makes the parent.
#include "cli/commands.h"

namespace ootci {

void add_select_commands(CLI::App& app) {
  auto* select = app.add_subcommand("select", "Choose the tests that mean something on the device");
  select->require_subcommand(1);
  add_select_bucket_commands(*select);
  add_select_changed_commands(*select);
  add_select_delta_commands(*select);
  add_select_wave2_commands(*select);
}

}  // namespace ootci
