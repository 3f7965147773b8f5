"""Records which ops a test calls on the device (`ootci discover`, docs/select.md).

Loaded by run_reporter.py only with OOTCI_RECORD_OPS=1, which `ootci discover` sets for its
recording pass alone: that pass gives the ops, and a separate plain pass gives the outcomes, so
the recorder never changes the outcome of a run that counts.

An op counts only when one of its tensor arguments, its device argument or its result is on the
device, so the CPU reference computations inside a test do not pollute the set. An op is recorded
before it runs, so one that raises (an unimplemented kernel) is in the set. Ops are named
`aten::add.Tensor`, or `aten::ones` for a default overload. With each op come the dtypes of its
tensors on the device, arguments and results, over all its calls: `aten::add.Tensor:float32`
(`op_dtypes`), so a change that affects one dtype selects only the tests that ran the op with it.

Two recorders, chosen by OOTCI_RECORDER:

- `observer` (the default): a global RecordFunction callback in C++ (csrc/op_observer.cpp, built
  once per source and torch version into the ootci cache, like the reference backend). It takes
  no part in dispatch, so a test runs the kernels and branches of a plain run, and it sees every
  call the dispatcher makes: inside CompositeExplicitAutograd kernels (`aten::ones` runs empty and
  fill_), inside the backend's own kernels and in autograd's backward on its device threads. Ops
  that decompose (CompositeImplicitAutograd, without a kernel of the device's own) are left out;
  their parts are recorded as they run. When it cannot be built or loaded, the dispatch mode
  below records instead (a warning says why).
- `mode`: a TorchDispatchMode. It sees an op after autograd and after CompositeImplicitAutograd
  decompositions, but not what a composite kernel dispatches internally, since the dispatcher
  takes the mode off the stack while it handles a call. So for a call that dispatches to a
  CompositeExplicitAutograd(NonFunctional) kernel on the device (no kernel of the device's own),
  the mode runs that kernel itself with the mode entered again, and records the device ops it
  reaches too (recursively). This changes how the kernel runs: its nested calls cross Python, and
  a boxed backend fallback can see different arguments than in a plain run. Being a mode at all
  changes paths too: ATen takes "tensor subclass" branches whenever a dispatch mode is active
  (isTensorSubclassLike), so cumprod's backward, for one, never calls `any` under it. Fine for
  ops evidence, not for outcomes, which is why discover takes those from its plain pass. If a
  composite kernel raises, the op runs again plainly, except an op that writes its arguments
  (in-place, out=), whose exception propagates, so its side effects never happen twice. An op its
  own kernel reaches again (detach) runs plainly.

Either way a recorder failure records nothing for that test phase (ops None), and the test runs
on: an op's own exception propagates untouched.
"""
import fcntl
import functools
import hashlib
import math
import os
import pathlib
import sys
import threading

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


def recorder_kind() -> str:
    """'observer' (default) or 'mode', from $OOTCI_RECORDER."""
    return "mode" if os.environ.get("OOTCI_RECORDER") == "mode" else "observer"


# --- The observer: a RecordFunction callback in C++ -------------------------------------------

def _observer_start(device):
    import torch
    torch.ops.ootci_observer.start(device, _dispatch_key(device))


def _observer_stop():
    """(ops, op:dtype pairs, the pairs seen only while generating inputs) recorded since
    _observer_start; raises if the observer failed on the way."""
    import torch
    ops, pairs, input_only = set(), set(), set()
    for entry in torch.ops.ootci_observer.stop():  # "aten::add.Tensor float32 @int64"
        op, *dtypes = entry.split(" ")
        ops.add(op)
        for d in dtypes:
            pair = f"{op}:{d.lstrip('@')}"
            pairs.add(pair)
            if d.startswith("@"):
                input_only.add(pair)
    return ops, pairs, input_only


# --- Input generation ----------------------------------------------------------------------
# The ops a test calls while it makes its inputs (torch.testing.make_tensor, an OpInfo's sample,
# reference and error inputs) are recorded apart: a float32 test calls mul, add and rsub on the
# device in make_tensor alone, and a change to them alters the values it draws, not what it
# checks against the CPU. Selection ranks such evidence below the test's own calls.

_inputs = threading.local()
_observer_active = False  # the observer records right now (inputs() is only called then)


def input_depth() -> int:
    return getattr(_inputs, "depth", 0)


class generating_inputs:
    """Marks the calls inside as input generation, for both recorders."""

    def __enter__(self):
        _inputs.depth = input_depth() + 1
        if _observer_active:
            import torch
            torch.ops.ootci_observer.inputs(True)

    def __exit__(self, *exc):
        _inputs.depth = max(input_depth() - 1, 0)
        if _observer_active:
            import torch
            torch.ops.ootci_observer.inputs(False)
        return False


# --- The input probe (`ootci discover --probe-inputs K`) ------------------------------------
# With OOTCI_PROBE_INPUTS=<shift> every device tensor a test draws as input (what make_tensor and
# an OpInfo's sample inputs return) comes out moved by that shift, as a value bug in an op used
# only to make inputs would move it: floats by the shift, both parts of a complex value by it,
# integers by its sign times at least one, bools negated. A test that passes plainly but fails so
# depends on the values it draws; selection keeps it with the tests that call a changed op
# themselves.

_PROBE_DEPTH = 8  # how deep a sample's nested lists and dicts are searched for tensors


def probe_shift():
    """The shift of $OOTCI_PROBE_INPUTS, or None when not probing."""
    value = os.environ.get("OOTCI_PROBE_INPUTS")
    return float(value) if value else None


def _shift_inputs(value, shift, seen, depth=0):
    """Moves, in place, each device tensor in value (a tensor, a SampleInput or ErrorInput, or
    lists, tuples and dicts of them). A tensor the device cannot move stays as it is."""
    import torch
    if depth > _PROBE_DEPTH or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        if value.device.type != device_type() or value.is_sparse or value.numel() == 0:
            return
        data = value.data  # an alias autograd does not see: no version bump, no graph
        try:
            if data.dtype == torch.bool:
                data.logical_not_()
            elif data.is_complex():
                data.add_(complex(shift, shift))
            elif data.is_floating_point():
                data.add_(shift)
            else:
                data.add_(int(math.copysign(max(1, round(abs(shift))), shift)))
        except Exception:
            pass
        return
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, dict):
        items = value.values()
    elif hasattr(value, "sample_input"):  # ErrorInput
        items = [value.sample_input]
    elif all(hasattr(value, a) for a in ("input", "args", "kwargs")):  # SampleInput
        items = [value.input, value.args, value.kwargs]
    else:
        return
    for item in items:
        _shift_inputs(item, shift, seen, depth + 1)


def _probed(value):
    """value, moved when probing, unless an outer input generation will move it."""
    shift = probe_shift()
    if shift is not None and input_depth() == 0:
        _shift_inputs(value, shift, set())
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


_OBSERVER_SOURCE = pathlib.Path(__file__).resolve().parent / "csrc" / "op_observer.cpp"
_OBSERVER_NAME = "ootci_op_observer"
_observer_loaded = None  # None: not tried yet; then True or False


def _cache_root() -> pathlib.Path:
    base = os.environ.get("OOTCI_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ootci")
    return pathlib.Path(base)


def _build_observer() -> pathlib.Path:
    """The observer library for this source and torch version, built first if missing."""
    import torch
    digest = hashlib.sha256(torch.__version__.encode() + b"\0" + _OBSERVER_SOURCE.read_bytes())
    build_dir = _cache_root() / "op-observer" / digest.hexdigest()[:20]
    library = build_dir / f"{_OBSERVER_NAME}.so"
    if library.exists():
        return library
    build_dir.mkdir(parents=True, exist_ok=True)
    # Parallel test processes may all arrive here; one builds, the others wait for it.
    with open(build_dir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not library.exists():
            from torch.utils import cpp_extension
            # NDEBUG as in a release libtorch: RecordFunction::inputs() asserts on a flag that
            # only a debug libtorch sets.
            cpp_extension.load(name=_OBSERVER_NAME, sources=[str(_OBSERVER_SOURCE)],
                               build_directory=str(build_dir), is_python_module=False,
                               extra_cflags=["-std=c++17", "-O2", "-DNDEBUG", "-Wall", "-Werror"],
                               verbose=False)
    return library


def observer_available() -> bool:
    """Builds and loads the observer once per process; False (with a warning) if it cannot."""
    global _observer_loaded
    if _observer_loaded is None:
        try:
            import torch
            torch.ops.load_library(str(_build_observer()))
            _observer_loaded = hasattr(torch.ops.ootci_observer, "start")
        except Exception as e:  # no compiler, no headers, a torch without RecordFunction inputs
            _observer_loaded = False
            print(f"ootci: op observer unavailable ({type(e).__name__}: {str(e)[:500]}); "
                  "recording ops with a dispatch mode", file=sys.stderr)
    return _observer_loaded


_dispatch_keys = {}  # device type -> its backend dispatch key, or ""


def _dispatch_key(device):
    """The backend dispatch key whose kernel table the device's calls use, read from an empty
    tensor's key set, so that no device is named here."""
    key = _dispatch_keys.get(device)
    if key is None:
        try:
            import torch
            keys = str(torch._C._dispatch_keys(torch.empty(0, device=device)))
            # "DispatchKeySet(<Backend>, ADInplaceOrView, Autograd<Backend>)": the backend key
            # comes first.
            key = keys[keys.index("(") + 1:].split(",")[0].strip(" )")
        except Exception:
            key = ""
        _dispatch_keys[device] = key
    return key


class Recording:
    """Context manager around one test phase; `ops` is the sorted list, or None if not recorded,
    `op_dtypes` the sorted "op:dtype" pairs, and `input_op_dtypes` those of them seen only while
    the test generated its inputs."""

    def __init__(self):
        self.ops = None
        self.op_dtypes = None
        self.input_op_dtypes = None
        self._mode = None
        self._observing = False

    def __enter__(self):
        try:
            if recorder_kind() == "observer" and observer_available():
                global _observer_active
                _observer_start(device_type())
                self._observing = True
                _observer_active = True
            else:
                self._enter_mode()
        except Exception:
            self._mode, self._observing = None, False
        return self

    def _enter_mode(self):
        from ootci_torch.recording_mode import OpRecordingMode  # imports torch
        mode = OpRecordingMode(device_type())
        mode.__enter__()
        self._mode = mode

    def __exit__(self, exc_type, exc, tb):
        if self._observing:
            global _observer_active
            self._observing = _observer_active = False
            try:
                ops, pairs, input_only = _observer_stop()
                self.ops, self.op_dtypes = sorted(ops), sorted(pairs)
                self.input_op_dtypes = sorted(input_only)
            except Exception:
                self.ops = None  # it failed on the way: an incomplete set is not reported
            return False
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
            self.ops, self.op_dtypes = sorted(mode.ops), sorted(mode.op_dtypes)
            self.input_op_dtypes = sorted(mode.input_op_dtypes - mode.body_op_dtypes)
        return False
