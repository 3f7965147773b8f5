#pragma once
#include <c10/core/Allocator.h>

namespace ootci_ref {

// The allocator every reference-backend tensor's storage comes from.
c10::Allocator* allocator();

}  // namespace ootci_ref
