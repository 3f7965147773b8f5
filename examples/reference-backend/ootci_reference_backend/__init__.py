"""The reference privateuse1 backend: importing this module registers the device.

The C++ extension is built once per source hash into the ootci cache and loaded from there, so
every test process after the first pays only a dlopen.
"""
import fcntl
import hashlib
import os
import pathlib

import torch

_HERE = pathlib.Path(__file__).resolve().parent
_SOURCES = sorted((_HERE.parent / "csrc").glob("*.[ch]*"))
_NAME = "ootci_reference_backend_C"


def cache_root() -> pathlib.Path:
    base = os.environ.get("OOTCI_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ootci")
    return pathlib.Path(base)


def source_hash() -> str:
    h = hashlib.sha256()
    h.update(torch.__version__.encode())
    for path in _SOURCES:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def build() -> pathlib.Path:
    """Returns the built library, building it first if this source hash has none."""
    build_dir = cache_root() / "reference-backend" / source_hash()
    library = build_dir / f"{_NAME}.so"
    if library.exists():
        return library
    build_dir.mkdir(parents=True, exist_ok=True)
    # Parallel test processes may all arrive here; one builds, the others wait for it.
    with open(build_dir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not library.exists():
            from torch.utils import cpp_extension
            cpp_extension.load(name=_NAME, sources=[str(s) for s in _SOURCES if s.suffix == ".cpp"],
                               build_directory=str(build_dir), is_python_module=False,
                               extra_cflags=["-std=c++17", "-O2", "-Wall", "-Werror"], verbose=False)
    return library


def load() -> None:
    torch.ops.load_library(str(build()))


load()
