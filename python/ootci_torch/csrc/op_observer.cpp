// The op observer behind ootci_torch.op_recorder (docs/select.md): a global RecordFunction
// callback that records which ops are called with a tensor, a device or a result on one device
// type. Unlike a TorchDispatchMode it takes no part in dispatch, so a test runs the same kernels
// and takes the same branches as in a plain run, and it sees every call the dispatcher makes
// from the top: inside composite kernels, inside the backend's own kernels and in autograd's
// backward on its device threads.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/DispatchKey.h>
#include <torch/library.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace ootci_observer {
namespace {

struct State {
  std::mutex mutex;
  std::set<std::string> ops;
  // op name -> recorded: false for an op that decomposes (CompositeImplicitAutograd) without a
  // kernel of the device's own, whose parts are recorded as they run (as a dispatch mode sees it).
  std::unordered_map<std::string, bool> counts;
  c10::DispatchKey device_key = c10::DispatchKey::Undefined;
  bool failed = false;
  at::CallbackHandle handle = 0;
};

// Never destroyed: a callback may still run while the process exits.
State& state() {
  static State* s = new State;
  return *s;
}

std::atomic<int> g_device{-1};  // the c10::DeviceType recorded, -1 when not recording

bool on_device(const c10::IValue& v, c10::DeviceType type) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return t.defined() && t.device().type() == type;
  }
  if (v.isDevice()) return v.toDevice().type() == type;
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector())
      if (t.defined() && t.device().type() == type) return true;
    return false;
  }
  if (v.isList()) {  // Tensor?[] (index) and other lists
    for (const c10::IValue& e : v.toListRef())
      if (on_device(e, type)) return true;
    return false;
  }
  return false;
}

bool counts(State& s, const c10::OperatorName& name, const std::string& full) {
  auto it = s.counts.find(full);
  if (it != s.counts.end()) return it->second;
  bool recorded = true;
  auto op = c10::Dispatcher::singleton().findOp(name);
  if (op && op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
      !(s.device_key != c10::DispatchKey::Undefined && op->hasKernelForDispatchKey(s.device_key)))
    recorded = false;
  s.counts.emplace(full, recorded);
  return recorded;
}

void note(const at::RecordFunction& fn, c10::ArrayRef<const c10::IValue> values) {
  int device = g_device.load(std::memory_order_relaxed);
  if (device < 0) return;
  try {
    auto type = static_cast<c10::DeviceType>(device);
    bool found = false;
    for (const c10::IValue& v : values)
      if ((found = on_device(v, type))) break;
    if (!found) return;
    auto name = fn.operator_name();
    if (!name) return;
    std::string full =
        name->overload_name.empty() ? name->name : name->name + "." + name->overload_name;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (counts(s, *name, full)) s.ops.insert(std::move(full));
  } catch (...) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.failed = true;
  }
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  note(fn, fn.inputs());  // before the kernel runs: an op that raises is recorded too
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  const std::vector<c10::IValue>& out = fn.outputs();
  note(fn, c10::ArrayRef<const c10::IValue>(out.data(), out.size()));
}

// Starts recording the ops called on `device_type` ("privateuseone"); `dispatch_key` is the
// backend key of that device ("PrivateUse1"), or "" when unknown.
void start(c10::string_view device_type, c10::string_view dispatch_key) {
  c10::Device device{std::string(device_type)};
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.ops.clear();
    s.failed = false;
    c10::DispatchKey key = dispatch_key.empty() ? c10::DispatchKey::Undefined
                                                : c10::parseDispatchKey(std::string(dispatch_key));
    if (key != s.device_key) s.counts.clear();
    s.device_key = key;
  }
  if (s.handle == 0)
    s.handle = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                         .needsInputs(true)
                                         .needsOutputs(true)
                                         .scopes({at::RecordScope::FUNCTION}));
  g_device = static_cast<int>(device.type());
}

// Stops recording; the sorted op names, or an error when the observer failed on the way.
std::vector<std::string> stop() {
  g_device = -1;
  State& s = state();
  if (s.handle != 0) {
    at::removeCallback(s.handle);
    s.handle = 0;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  TORCH_CHECK(!s.failed, "ootci op observer: failed while recording; its op set is incomplete");
  std::vector<std::string> out(s.ops.begin(), s.ops.end());
  s.ops.clear();
  return out;
}

}  // namespace
}  // namespace ootci_observer

TORCH_LIBRARY(ootci_observer, m) {
  m.def("start(str device_type, str dispatch_key) -> ()", &ootci_observer::start);
  m.def("stop() -> str[]", &ootci_observer::stop);
}
