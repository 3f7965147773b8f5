"""Which device calls a test makes while it generates its inputs (docs/select.md).

The ops a test calls while it makes its inputs (torch.testing.make_tensor, an OpInfo's sample,
reference and error inputs) are recorded apart: a float32 test calls mul, add and rsub on the
device in make_tensor alone, and a change to them alters the values it draws, not what it checks
against the CPU. The pairs a test reaches only there are its `input_op_dtypes` (op_record.py);
selection ranks such evidence below the test's own calls.

The same wrappers hand what the generators return to the input probe (input_probe.py)."""
import functools
import sys
import threading

from ootci_torch import input_probe, op_observer, recording_config

_state = threading.local()


def depth() -> int:
    """How many input generators this thread is inside; 0 in the test's own calls."""
    return getattr(_state, "depth", 0)


class generating_inputs:
    """Marks the calls inside as input generation, for both recorders."""

    def __enter__(self):
        _state.depth = depth() + 1
        op_observer.mark_inputs(True)

    def __exit__(self, *exc):
        _state.depth = max(depth() - 1, 0)
        op_observer.mark_inputs(False)
        return False


def _probed(value):
    """value, moved when probing, unless an outer input generation will move it."""
    shift = recording_config.probe_shift()
    if shift is not None and depth() == 0:
        input_probe.shift_inputs(value, shift)
    return value


def _generating(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with generating_inputs():
            result = function(*args, **kwargs)
        return _probed(result)
    wrapper._ootci_original = function
    return wrapper


class _GeneratingIterator:
    """An iterator whose every step (a lazily built sample) counts as input generation."""

    def __init__(self, inner):
        self._inner = inner

    def __iter__(self):
        return self

    def __next__(self):
        with generating_inputs():
            sample = next(self._inner)
        return _probed(sample)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _generating_samples(method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with generating_inputs():
            samples = method(*args, **kwargs)
        if isinstance(samples, (list, tuple)):
            for sample in samples:
                _probed(sample)
            return samples
        return _GeneratingIterator(iter(samples))
    wrapper._ootci_original = method
    return wrapper


def mark_input_generators():
    """Wraps make_tensor (everywhere a module holds it) and OpInfo's input methods so their device
    calls count as input generation. Idempotent; called again once test modules are imported."""
    from torch.testing import _creation
    current = _creation.make_tensor
    original = getattr(current, "_ootci_original", current)
    wrapped = current if current is not original else _generating(original)
    for module in list(sys.modules.values()):
        try:
            # The module's own names only: getattr would run a lazy module's __getattr__.
            if vars(module).get("make_tensor") is original:
                module.make_tensor = wrapped
        except Exception:
            pass
    try:
        from torch.testing._internal.opinfo.core import OpInfo
    except Exception:
        return
    for name in ("sample_inputs", "reference_inputs", "error_inputs"):
        method = getattr(OpInfo, name, None)
        if method is not None and not hasattr(method, "_ootci_original"):
            setattr(OpInfo, name, _generating_samples(method))
