"""Records which aten ops a test calls on the device (`ootci discover`, docs/select.md).

A TorchDispatchMode sees every aten op the test's code reaches after autograd and after
CompositeImplicitAutograd decompositions. An op counts only when one of its tensor arguments, its
`device=` argument or its result is on the device, so the CPU reference computations inside a test
do not pollute the set. An op is recorded before it runs, so one that raises (an unimplemented
kernel) is in the set.

Inside composite kernels: an op without a kernel of its own for the device runs a
CompositeExplicitAutograd(NonFunctional) kernel there when it has one (`aten::ones` runs empty and
fill_, `masked_fill.Scalar` runs clone and masked_fill_, `add.Tensor` runs add.out). The mode sees
only the outer call, because the dispatcher takes it off the stack while it handles a call. So for
a call that dispatches to the device, the recorder runs that composite kernel itself with the mode
entered again, and the ops it reaches on the device are recorded too (recursively). That changes
how the kernel runs: its nested calls cross Python, and a boxed backend fallback can see
different arguments than in a plain run (the reference backend's index fallback then succeeds
where it fails without the recorder). This is fine because `ootci discover` takes only ops from
the recording pass; its outcomes come from a separate plain pass and the recording run is
deleted. If the composite call raises, the op runs again plainly, except an op that mutates an
argument (in-place, out=), whose exception propagates, so its side effects never happen twice.
An op already being expanded runs plainly when its kernel reaches it again (detach does).

The recorder never changes a test's outcome in a plain run (it is loaded only with
OOTCI_RECORD_OPS=1). An op's own exception propagates; when the recorder itself fails, or the
mode cannot be entered, the test runs on and records nothing.
"""
import os

_OVERLOAD_DEFAULT = "default"
_PLAIN = object()  # run the op plainly


def op_name(func) -> str:
    """'aten::add.Tensor', or 'aten::view' for a default overload."""
    overload = getattr(func, "_overloadname", _OVERLOAD_DEFAULT)
    name = func._schema.name
    return name if overload == _OVERLOAD_DEFAULT else f"{name}.{overload}"


def device_type() -> str:
    """$OOTCI_DEVICE_TYPE, else the plan's device (the string torch.device(...).type gives)."""
    explicit = os.environ.get("OOTCI_DEVICE_TYPE")
    if explicit:
        return explicit
    from ootci_torch import plan as _plan
    return _plan.current().device_type


def enabled() -> bool:
    return os.environ.get("OOTCI_RECORD_OPS") == "1"


# torch.device(...).type -> the backend dispatch key whose kernel table the device's calls use.
_DISPATCH_KEYS = {"privateuseone": "PrivateUse1", "xla": "XLA", "hpu": "HPU", "xpu": "XPU",
                  "mps": "MPS", "ipu": "IPU", "ve": "VE", "lazy": "Lazy", "ort": "ORT",
                  "cuda": "CUDA", "meta": "Meta"}


def _make_mode_class():
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    Tensor, Device = torch.Tensor, torch.device
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    DispatchKey = torch._C.DispatchKey
    # What a backend key without its own kernel runs, in the dispatcher's order (1.13,
    # OperatorEntry::computeDispatchTableEntry); after them comes the backend fallback.
    composites = [(name, getattr(DispatchKey, name)) for name in
                  ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd")
                  if hasattr(DispatchKey, name)]

    def on_device(values, device):
        for v in values:
            if isinstance(v, Tensor):
                if v.device.type == device:
                    return True
            elif isinstance(v, (list, tuple)):
                if on_device(v, device):
                    return True
            elif isinstance(v, Device):
                if v.type == device:
                    return True
            elif isinstance(v, str) and v.split(":", 1)[0] == device:
                return True  # device="<type>:0"
        return False

    def tensor_devices(values, found):
        for v in values:
            if isinstance(v, Tensor):
                found.add(v.device.type)
            elif isinstance(v, (list, tuple)):
                tensor_devices(v, found)
        return found

    def dispatch_key_of(values, device, device_key):
        """The backend key whose kernel the call runs, for a call that involves the device: the
        device's when a tensor argument is on it (its key outranks the CPU's) or when no argument
        is a tensor (a factory with device=); CPU for CPU tensors moved there (`_to_copy`)."""
        found = tensor_devices(values, set())
        if not found or device in found:
            return device_key
        return "CPU" if found == {"cpu"} else None

    def mutates(func):
        return any(a.alias_info is not None and a.alias_info.is_write
                   for a in func._schema.arguments)

    names = {}       # OpOverload -> "aten::name.overload"
    composite = {}   # (OpOverload, backend key) -> (composite DispatchKey it runs, mutates) or None

    def composite_of(func, backend_key):
        try:
            return composite[func, backend_key]
        except KeyError:
            pass
        found = None
        try:
            name = func.name()
            if hasattr(func, "_op_dk") and not has_kernel(name, backend_key):
                for key_name, key in composites:
                    if has_kernel(name, key_name):
                        found = (key, mutates(func))
                        break
        except Exception:
            found = None  # an op the dispatcher cannot describe runs plainly
        composite[func, backend_key] = found
        return found

    class OpRecordingMode(TorchDispatchMode):
        def __init__(self, device):
            super().__init__()
            self.device = device
            self.device_key = _DISPATCH_KEYS.get(device)
            self.ops = set()
            self.active = True  # False once the test is over: a mode left behind only passes through
            self.broken = False  # the recorder failed: its set is incomplete, so nothing is reported
            self.expanding = set()  # ops whose composite kernel is running under the mode

        def _note(self, func, values) -> bool:
            """True when there is nothing more to learn about this call."""
            if not self.active or self.broken:
                return True
            try:
                name = names.get(func)
                if name is None:
                    name = names[func] = op_name(func)
                if name in self.ops:
                    return True  # already recorded: skip the device check
                if on_device(values, self.device):
                    self.ops.add(name)
                    return True
            except Exception:
                self.broken = True
                return True
            return False

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
            seen = self._note(func, values)
            inside = self._composite_to_run(func, types, values)
            if inside is not None:
                out = self._try_composite(func, inside, args, kwargs)
                if out is not _PLAIN:
                    return out
            out = func(*args, **kwargs)
            if not seen:
                self._note(func, (out,))
            return out

    return OpRecordingMode


_mode_class = None


class Recording:
    """Context manager around one test phase; `ops` is the sorted list, or None if not recorded."""

    def __init__(self):
        self.ops = None
        self._mode = None

    def __enter__(self):
        global _mode_class
        try:
            if _mode_class is None:
                _mode_class = _make_mode_class()
            mode = _mode_class(device_type())
            mode.__enter__()
            self._mode = mode
        except Exception:
            self._mode = None
        return self

    def __exit__(self, exc_type, exc, tb):
        mode, self._mode = self._mode, None
        if mode is None:
            return False
        mode.active = False
        try:
            from torch.utils._python_dispatch import _get_current_dispatch_mode
            # Popping only our own mode: a test that left its own mode pushed keeps it, and ours
            # stays below it as a pass-through.
            if _get_current_dispatch_mode() is mode:
                mode.__exit__(None, None, None)
        except Exception:
            pass
        if not mode.broken:
            self.ops = sorted(mode.ops)
        return False
