"""The dispatch-mode recorder of op_recorder.py (OOTCI_RECORDER=mode, or when the C++ observer
cannot be built): a TorchDispatchMode that records the device ops a test calls, and runs a
CompositeExplicitAutograd kernel under itself so the device ops inside it are seen too. See
op_recorder.py for what it sees and what it changes.

Its own module, imported only when a mode is needed, because it imports torch at the top; its
helpers (does a call involve the device, which kernel does it run) are tested alone in
tests/backend/test_recording_mode.py."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ootci_torch import input_generation, recording_config

_PLAIN = object()  # run the op plainly
_OVERLOAD_DEFAULT = "default"

# What a backend key without its own kernel runs, in the dispatcher's order (1.13,
# OperatorEntry::computeDispatchTableEntry); after them comes the backend fallback.
_COMPOSITE_KEYS = [(name, getattr(torch._C.DispatchKey, name)) for name in
                   ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd")
                   if hasattr(torch._C.DispatchKey, name)]

_names = {}      # OpOverload -> "aten::name.overload"
_composite = {}  # (OpOverload, backend key) -> (composite DispatchKey it runs, mutates) or None


def op_name(func) -> str:
    """'aten::add.Tensor', or 'aten::view' for a default overload."""
    overload = getattr(func, "_overloadname", _OVERLOAD_DEFAULT)
    name = func._schema.name
    return name if overload == _OVERLOAD_DEFAULT else f"{name}.{overload}"


def on_device(values, device) -> bool:
    """Whether any of `values` (nested lists and tuples too) is a tensor on the device type
    `device`, that device, or a string naming it ("<type>" or "<type>:0")."""
    for v in values:
        if isinstance(v, torch.Tensor):
            if v.device.type == device:
                return True
        elif isinstance(v, (list, tuple)):
            if on_device(v, device):
                return True
        elif isinstance(v, torch.device):
            if v.type == device:
                return True
        elif isinstance(v, str) and v.split(":", 1)[0] == device:
            return True
    return False


def device_dtypes(values, device, found=None) -> set:
    """torch's names ("float32") of the dtypes of the tensors on `device` among `values`."""
    found = set() if found is None else found
    for v in values:
        if isinstance(v, torch.Tensor):
            if v.device.type == device:
                found.add(str(v.dtype).rsplit(".", 1)[-1])
        elif isinstance(v, (list, tuple)):
            device_dtypes(v, device, found)
    return found


def tensor_devices(values, found=None) -> set:
    """The device types of the tensors among `values` (nested lists and tuples too)."""
    found = set() if found is None else found
    for v in values:
        if isinstance(v, torch.Tensor):
            found.add(v.device.type)
        elif isinstance(v, (list, tuple)):
            tensor_devices(v, found)
    return found


def dispatch_key_of(values, device, device_key):
    """The backend key whose kernel the call runs, for a call that involves the device: the
    device's when a tensor argument is on it (its key outranks the CPU's) or when no argument
    is a tensor (a factory with device=); CPU for CPU tensors moved there (`_to_copy`)."""
    found = tensor_devices(values)
    if not found or device in found:
        return device_key
    return "CPU" if found == {"cpu"} else None


def mutates(func) -> bool:
    """Whether the op writes one of its arguments (in-place or out=)."""
    return any(a.alias_info is not None and a.alias_info.is_write
               for a in func._schema.arguments)


def composite_of(func, backend_key):
    """(composite DispatchKey, mutates) when `backend_key` has no kernel of its own for the op and
    a CompositeExplicitAutograd(NonFunctional) kernel runs instead; None otherwise. Cached."""
    try:
        return _composite[func, backend_key]
    except KeyError:
        pass
    found = None
    try:
        name = func.name()
        has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
        if hasattr(func, "_op_dk") and not has_kernel(name, backend_key):
            for key_name, key in _COMPOSITE_KEYS:
                if has_kernel(name, key_name):
                    found = (key, mutates(func))
                    break
    except Exception:
        found = None  # an op the dispatcher cannot describe runs plainly
    _composite[func, backend_key] = found
    return found


class OpRecordingMode(TorchDispatchMode):
    """Records into `ops` the names of the ops called on `device` while it is entered."""

    def __init__(self, device):
        super().__init__()
        self.device = device
        self.device_key = recording_config.dispatch_key(device) or None
        self.ops = set()
        self.op_dtypes = set()  # "aten::add.Tensor:float32"
        self.body_op_dtypes = set()  # of them, seen outside input generation (op_record.py)
        self.active = True  # False once the test is over: a mode left behind only passes through
        self.broken = False  # the recorder failed: its set is incomplete, so nothing is reported
        self.expanding = set()  # ops whose composite kernel is running under the mode

    def _note(self, func, values):
        """Records the op when `values` involve the device, with their dtypes there."""
        if not self.active or self.broken:
            return
        try:
            name = _names.get(func)
            if name is None:
                name = _names[func] = op_name(func)
            if on_device(values, self.device):
                self.ops.add(name)
                pairs = {f"{name}:{d}" for d in device_dtypes(values, self.device)}
                self.op_dtypes |= pairs
                if input_generation.depth() == 0:
                    self.body_op_dtypes |= pairs
        except Exception:
            self.broken = True

    def _composite_to_run(self, func, types, values):
        """(key, mutates) when this call should run its composite kernel under the mode."""
        if not self.active or self.broken or types or func in self.expanding:
            return None
        try:
            if self.device_key is None or (composite_of(func, self.device_key) is None and
                                           composite_of(func, "CPU") is None):
                return None  # the common case: no composite kernel to look into
            if not on_device(values, self.device):
                return None  # a call that does not involve the device
            backend_key = dispatch_key_of(values, self.device, self.device_key)
            return composite_of(func, backend_key) if backend_key else None
        except Exception:
            self.broken = True
            return None

    def _try_composite(self, func, inside, args, kwargs):
        """The composite kernel's result under the mode, or _PLAIN when the op should run
        plainly (the mode could not be entered again, or the kernel raised and the op mutates
        nothing)."""
        key, mutating = inside
        try:
            self.__enter__()
        except Exception:
            self.broken = True
            return _PLAIN
        self.expanding.add(func)
        try:
            return func._op_dk(key, *args, **kwargs)
        except Exception:
            if mutating:
                raise  # it may have written its arguments already: never twice
            return _PLAIN
        finally:
            self.expanding.discard(func)
            try:
                self.__exit__(None, None, None)
            except Exception:
                self.broken = True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        values = (args, tuple(kwargs.values()))
        self._note(func, values)
        inside = self._composite_to_run(func, types, values)
        if inside is not None:
            out = self._try_composite(func, inside, args, kwargs)
            if out is not _PLAIN:
                self._note(func, (out,))
                return out
        out = func(*args, **kwargs)
        self._note(func, (out,))  # a result's dtype may differ from the arguments' (eq: bool)
        return out
