#pragma once
// Helpers shared by unit and integration tests. Test-only code: never linked into ootci.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "relay_store/store.h"

namespace ootci {

// A fresh directory under $TMPDIR, removed at process exit.
std::string make_temp_dir();

// "sqlite" always; "postgres" when OOTCI_TEST_PG_URI names a server (scripts/test starts one).
std::vector<std::string> test_store_kinds();
// A store URI with nothing in it: a new SQLite file, or a new PostgreSQL schema.
std::string fresh_store_uri(const std::string& kind);
std::unique_ptr<Store> open_test_store(const std::string& kind);

std::string source_dir();                               // the repository root
std::string binary_dir();                               // the CMake build directory
std::string fixture_path(const std::string& relative);  // under tests/fixtures
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& content);

// The message of the ootci::Error that f throws; "" when it throws none.
std::string error_of(const std::function<void()>& f);

}  // namespace ootci
