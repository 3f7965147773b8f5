// The device itself: memory from the host allocator, tagged PrivateUse1, and a single-device guard.
#include "device.h"

#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>

namespace ootci_ref {
namespace {

struct HostBackedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) const override {
    void* data = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    return {data, data, &c10::free_cpu, c10::Device(c10::DeviceType::PrivateUse1, 0)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &c10::free_cpu; }
};

HostBackedAllocator g_allocator;

// One device, one default stream; the device is synchronous, so events are not needed.
struct SingleDeviceGuard final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device) const override { return c10::Device(kType, 0); }
  c10::Device getDevice() const override { return c10::Device(kType, 0); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.index() <= 0, "the reference backend has one device, got index ", d.index());
  }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
};

}  // namespace

c10::Allocator* allocator() {
  return &g_allocator;
}

}  // namespace ootci_ref

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &ootci_ref::g_allocator);
C10_REGISTER_GUARD_IMPL(PrivateUse1, ootci_ref::SingleDeviceGuard);
