// The kernels a privateuse1 backend must provide itself; every other op runs on the CPU through
// the boxed fallback below.
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include "device.h"
#include "faults.h"

namespace ootci_ref {
namespace {

constexpr c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::PrivateUse1);

at::Tensor empty_memory_format(at::IntArrayRef size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout>, c10::optional<at::Device>,
                               c10::optional<bool>, c10::optional<at::MemoryFormat> memory_format) {
  return at::detail::empty_generic(size, allocator(), kDeviceKeys, c10::dtype_or_default(dtype),
                                   memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
                         c10::optional<at::ScalarType> dtype, c10::optional<at::Layout>,
                         c10::optional<at::Device>, c10::optional<bool>) {
  return at::detail::empty_strided_generic(size, stride, allocator(), kDeviceKeys,
                                           c10::dtype_or_default(dtype));
}

// Device memory is host memory, so a copy in either direction is a CPU copy between views of the
// same bytes. The conj and neg bits are kept so copy_ resolves them.
at::Tensor host_view(const at::Tensor& t) {
  if (t.is_cpu()) return t;
  at::Tensor view =
      at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
  if (t.is_conj()) view = view._conj();
  if (t.is_neg()) view = view._neg_view();
  return view;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  TORCH_CHECK(self.is_cpu() || self.device().type() == c10::DeviceType::PrivateUse1,
              "reference backend: cannot copy from ", self.device());
  TORCH_CHECK(dst.is_cpu() || dst.device().type() == c10::DeviceType::PrivateUse1,
              "reference backend: cannot copy to ", dst.device());
  if (dst.numel() == 0) return dst;
  host_view(dst).copy_(host_view(self));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes());
  return copy_from(self, dst, false);
}

// Runs any other op on the CPU; the fault switches decide first whether the device "has" it.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  check_op_allowed(op);
  at::native::cpu_fallback(op, stack);
  apply_numeric_bugs(op, stack);
}

}  // namespace
}  // namespace ootci_ref

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(ootci_ref::empty_memory_format));
  m.impl("empty_strided", TORCH_FN(ootci_ref::empty_strided));
  m.impl("_copy_from", TORCH_FN(ootci_ref::copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(ootci_ref::copy_from_and_resize));
  // Storage resizing goes through the storage's own allocator, so the CPU kernel is correct here.
  m.impl("resize_", TORCH_FN(at::native::resize_));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  // reshape() goes through _reshape_alias; as a view it must not fall back to a CPU copy.
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&ootci_ref::cpu_fallback>());
}
