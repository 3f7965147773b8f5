"""The observer recorder of op_recorder.py (OOTCI_RECORDER=observer, the default): a global
RecordFunction callback in C++ (csrc/op_observer.cpp), built once per source and torch version
into the ootci cache, like the reference backend, and loaded once per process. See op_recorder.py
for what it sees.

torch is imported only when the observer is built or used."""
import fcntl
import hashlib
import os
import pathlib
import sys

from ootci_torch import recording_config
from ootci_torch.op_record import OpRecord

_SOURCE = pathlib.Path(__file__).resolve().parent / "csrc" / "op_observer.cpp"
_NAME = "ootci_op_observer"
_loaded = None   # None: not tried yet; then True or False
_active = False  # it records right now (between start and stop)


def _cache_root() -> pathlib.Path:
    base = os.environ.get("OOTCI_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ootci")
    return pathlib.Path(base)


def _build() -> pathlib.Path:
    """The observer library for this source and torch version, built first if missing."""
    import torch
    digest = hashlib.sha256(torch.__version__.encode() + b"\0" + _SOURCE.read_bytes())
    build_dir = _cache_root() / "op-observer" / digest.hexdigest()[:20]
    library = build_dir / f"{_NAME}.so"
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
            cpp_extension.load(name=_NAME, sources=[str(_SOURCE)],
                               build_directory=str(build_dir), is_python_module=False,
                               extra_cflags=["-std=c++17", "-O2", "-DNDEBUG", "-Wall", "-Werror"],
                               verbose=False)
    return library


def available() -> bool:
    """Builds and loads the observer once per process; False (with a warning) if it cannot."""
    global _loaded
    if _loaded is None:
        try:
            import torch
            torch.ops.load_library(str(_build()))
            _loaded = hasattr(torch.ops.ootci_observer, "start")
        except Exception as e:  # no compiler, no headers, a torch without RecordFunction inputs
            _loaded = False
            print(f"ootci: op observer unavailable ({type(e).__name__}: {str(e)[:500]}); "
                  "recording ops with a dispatch mode", file=sys.stderr)
    return _loaded


def start(device) -> None:
    """Starts recording the ops called on the device type `device`."""
    global _active
    import torch
    torch.ops.ootci_observer.start(device, recording_config.dispatch_key(device))
    _active = True


def stop() -> OpRecord:
    """What was recorded since start; raises if the observer failed on the way."""
    global _active
    _active = False
    import torch
    return OpRecord.from_observer(torch.ops.ootci_observer.stop())


def mark_inputs(entering: bool) -> None:
    """Tells the observer, while it records, that this thread enters or leaves input generation
    (input_generation.py)."""
    if _active:
        import torch
        torch.ops.ootci_observer.inputs(entering)
