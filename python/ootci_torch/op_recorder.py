"""Records which aten ops a test calls on the device (`ootci discover`, docs/select.md).

A TorchDispatchMode sees every aten op the test's code reaches after autograd and after
CompositeImplicitAutograd decompositions. An op counts only when one of its tensor arguments, its
`device=` argument or its result is on the device, so the CPU reference computations inside a test
do not pollute the set. An op is recorded before it runs, so one that raises (an unimplemented
kernel) is in the set.

What it does not see: the ops a CompositeExplicitAutograd kernel dispatches internally
(`torch.ones(device=d)` is recorded as aten::ones, not as the empty and fill_ it runs). Calling
such kernels from the mode to see inside them was tried and dropped: their nested calls then cross
Python, and a boxed backend fallback can see different arguments than in a plain run (the
reference backend's index fallback then succeeded where it fails without the recorder).

The recorder must not change what a test does: an op's own exception propagates untouched, and
when the recorder itself fails, or the mode cannot be entered, the test runs on and records
nothing. Being a dispatch mode, it does take part in dispatch, so a backend bug that depends on the
exact dispatch path (the reference backend's conjugate-copy recursion, a SIGSEGV without the
recorder) can show differently under it than in a plain run.
"""
import os

_OVERLOAD_DEFAULT = "default"


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


def _make_mode_class():
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    Tensor, Device = torch.Tensor, torch.device

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

    names = {}  # OpOverload -> "aten::name.overload"

    class OpRecordingMode(TorchDispatchMode):
        def __init__(self, device):
            super().__init__()
            self.device = device
            self.ops = set()
            self.active = True  # False once the test is over: a mode left behind only passes through
            self.broken = False  # the recorder failed: its set is incomplete, so nothing is reported

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

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            seen = self._note(func, (args, tuple(kwargs.values())))
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
