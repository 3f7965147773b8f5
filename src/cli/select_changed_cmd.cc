// Placeholder until the command lands.
#include "cli/commands.h"

namespace ootci {

void add_select_changed_commands(CLI::App&) {}

}  // namespace ootci
