// Placeholder until the command lands.
#include "cli/commands.h"

namespace ootci {

void add_select_bucket_commands(CLI::App&) {}

}  // namespace ootci
