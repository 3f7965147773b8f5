// The op observer behind ootci_torch.op_recorder (docs/select.md): a global RecordFunction
// callback that records which ops are called with a tensor, a device or a result on one device
// type, and with which dtypes of the device's tensors (arguments and results). Unlike a
// TorchDispatchMode it takes no part in dispatch, so a test runs the same kernels
// and takes the same branches as in a plain run, and it sees every call the dispatcher makes
// from the top: inside composite kernels, inside the backend's own kernels and in autograd's
// backward on its device threads.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/DispatchKey.h>
#include <torch/library.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace ootci_observer {
namespace {

struct State {
  std::mutex mutex;
  // op -> the dtypes of its tensors on the device, over every recorded call; calls made while
  // the test generates its inputs (make_tensor, sample inputs) go to `inputs` instead.
  std::map<std::string, std::set<std::string>> ops, inputs;
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
// Input generation under way on this thread (nested make_tensor calls count once each).
thread_local int t_input_depth = 0;

// torch's name of a dtype ("float32"), as test ids and configs spell it.
const char* torch_dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Bool:
      return "bool";
    case c10::ScalarType::Byte:
      return "uint8";
    case c10::ScalarType::Char:
      return "int8";
    case c10::ScalarType::Short:
      return "int16";
    case c10::ScalarType::Int:
      return "int32";
    case c10::ScalarType::Long:
      return "int64";
    case c10::ScalarType::Half:
      return "float16";
    case c10::ScalarType::BFloat16:
      return "bfloat16";
    case c10::ScalarType::Float:
      return "float32";
    case c10::ScalarType::Double:
      return "float64";
    case c10::ScalarType::ComplexHalf:
      return "complex32";
    case c10::ScalarType::ComplexFloat:
      return "complex64";
    case c10::ScalarType::ComplexDouble:
      return "complex128";
    default:
      return c10::toString(t);  // quantized and other rare types, as c10 names them
  }
}

// Whether `v` involves the device (a tensor on it, also inside a list, or the device itself);
// the dtypes of its tensors on the device are added to `dtypes`.
bool on_device(const c10::IValue& v, c10::DeviceType type, std::set<std::string>& dtypes) {
  auto tensor = [&](const at::Tensor& t) {
    if (!t.defined() || t.device().type() != type) return false;
    dtypes.insert(torch_dtype_name(t.scalar_type()));
    return true;
  };
  if (v.isTensor()) return tensor(v.toTensor());
  if (v.isDevice()) return v.toDevice().type() == type;
  bool found = false;
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) found = tensor(t) || found;
  } else if (v.isList()) {  // Tensor?[] (index) and other lists
    for (const c10::IValue& e : v.toListRef()) found = on_device(e, type, dtypes) || found;
  }
  return found;
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
    std::set<std::string> dtypes;
    for (const c10::IValue& v : values) found = on_device(v, type, dtypes) || found;
    if (!found) return;
    auto name = fn.operator_name();
    if (!name) return;
    std::string full =
        name->overload_name.empty() ? name->name : name->name + "." + name->overload_name;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (counts(s, *name, full))
      (t_input_depth > 0 ? s.inputs : s.ops)[full].insert(dtypes.begin(), dtypes.end());
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
    s.inputs.clear();
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

// Stops recording; per op "aten::add.Tensor float32 @int64" (its name, then the dtypes of its
// tensors on the device, `@` before a dtype seen only while generating inputs), sorted, or an
// error when the observer failed on the way.
std::vector<std::string> stop() {
  g_device = -1;
  State& s = state();
  if (s.handle != 0) {
    at::removeCallback(s.handle);
    s.handle = 0;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  TORCH_CHECK(!s.failed, "ootci op observer: failed while recording; its op set is incomplete");
  std::vector<std::string> out;
  for (const auto& [op, dtypes] : s.inputs) s.ops.try_emplace(op);
  for (const auto& [op, dtypes] : s.ops) {
    std::string entry = op;
    for (const std::string& d : dtypes) entry += " " + d;
    auto in = s.inputs.find(op);
    if (in != s.inputs.end())
      for (const std::string& d : in->second)
        if (!dtypes.count(d)) entry += " @" + d;
    out.push_back(std::move(entry));
  }
  s.ops.clear();
  s.inputs.clear();
  return out;
}

// Marks this thread's input generation (make_tensor, sample inputs): entered and left in pairs.
void inputs(bool entering) {
  t_input_depth += entering ? 1 : (t_input_depth > 0 ? -1 : 0);
}

}  // namespace
}  // namespace ootci_observer

TORCH_LIBRARY(ootci_observer, m) {
  m.def("inputs(bool entering) -> ()", &ootci_observer::inputs);
  m.def("start(str device_type, str dispatch_key) -> ()", &ootci_observer::start);
  m.def("stop() -> str[]", &ootci_observer::stop);
}
