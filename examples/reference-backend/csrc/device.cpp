// The device itself: memory from the host allocator, tagged PrivateUse1 and the current device
// index, and a device guard. OOTCI_REF_VISIBLE_DEVICES ("0", "1,3") says how many devices the
// process sees, as CUDA_VISIBLE_DEVICES does: indices 0..N-1, one by default.
#include "device.h"

#include "torch_compat.h"

#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstdlib>
#include <string>

namespace ootci_ref {
namespace {

c10::DeviceIndex visible_devices() {
  static const c10::DeviceIndex count = [] {
    const char* env = std::getenv("OOTCI_REF_VISIBLE_DEVICES");
    if (!env || !*env) return c10::DeviceIndex{1};
    c10::DeviceIndex n = 1;
    for (const char* c = env; *c; ++c) n += *c == ',';
    return n;
  }();
  return count;
}

thread_local c10::DeviceIndex g_current = 0;

struct HostBackedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) OOTCI_REF_ALLOCATE_CONST override {
    void* data = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    return {data, data, &c10::free_cpu, c10::Device(c10::DeviceType::PrivateUse1, g_current)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &c10::free_cpu; }
  OOTCI_REF_ALLOCATOR_COPY_DATA
};

HostBackedAllocator g_allocator;

// The visible devices, one default stream each; the device is synchronous, so events are not
// needed.
struct DeviceGuard final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old(kType, g_current);
    setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kType, g_current); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.index() < visible_devices(), "the reference backend sees ", visible_devices(),
                " device(s) (OOTCI_REF_VISIBLE_DEVICES), got index ", d.index());
    if (d.index() >= 0) g_current = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < visible_devices()) g_current = d.index();
  }
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  // torch 2.x's autograd engine asks for it when it runs a backward pass on the device.
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
  c10::DeviceIndex deviceCount() const noexcept override { return visible_devices(); }
};

}  // namespace

c10::Allocator* allocator() {
  return &g_allocator;
}

}  // namespace ootci_ref

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &ootci_ref::g_allocator);
C10_REGISTER_GUARD_IMPL(PrivateUse1, ootci_ref::DeviceGuard);
