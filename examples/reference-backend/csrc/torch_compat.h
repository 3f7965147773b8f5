#pragma once
// What changed in libtorch between the torch versions this backend builds against (Debian 12's
// 1.13 and Debian 13's 2.6), in one place; the code elsewhere names no version.
#include <torch/version.h>

#define OOTCI_REF_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if OOTCI_REF_TORCH_AT_LEAST(2, 3)
// 2.3: c10::Allocator::allocate is no longer const (pytorch#120969), and copy_data, which copies
// raw bytes between two of the allocator's blocks, is pure virtual.
#define OOTCI_REF_ALLOCATE_CONST
#define OOTCI_REF_ALLOCATOR_COPY_DATA                                                \
  void copy_data(void* dest, const void* src, std::size_t count) const override { \
    default_copy_data(dest, src, count);                                             \
  }
#else
#define OOTCI_REF_ALLOCATE_CONST const
#define OOTCI_REF_ALLOCATOR_COPY_DATA
#endif
