#pragma once
#include <stdexcept>
#include <string>

namespace ootci {

// Every error the user can act on. The message is complete: it names the file, line and field, or
// the operation that failed.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ootci
