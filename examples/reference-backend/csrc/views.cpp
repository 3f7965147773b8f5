// The complex views, as real views of the device's memory. torch 2.x's make_tensor draws a
// complex tensor through view_as_real; served by the CPU fallback, the view was a CPU copy, the
// draw went to the copy, and complex tests ran on whatever bytes the allocator gave (they passed
// or failed by chance).
#include <ATen/ATen.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <torch/library.h>

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
}
