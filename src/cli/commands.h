#pragma once
#include <CLI/CLI.hpp>

namespace ootci {

// Each subcommand file adds itself to the app; main.cc only calls these.
void add_relay_commands(CLI::App& app);

}  // namespace ootci
