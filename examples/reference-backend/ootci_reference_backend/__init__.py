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


def visible_devices() -> int:
    """How many devices this process sees: OOTCI_REF_VISIBLE_DEVICES ("0", "1,3"), one by default,
    as the C++ device guard counts them."""
    env = os.environ.get("OOTCI_REF_VISIBLE_DEVICES")
    return env.count(",") + 1 if env else 1


def device_name() -> str:
    # torch 1.13 has no way to rename PrivateUse1, nor to ask for its name: "privateuseone".
    return getattr(torch._C, "_get_privateuse1_backend_name", lambda: "privateuseone")()


class _DeviceModule:
    """torch.privateuseone: the Python module torch 2.x looks a privateuse1 device up in (its lazy
    initialization imports it, and upstream's test framework asks it whether the device is
    available); torch 1.13 registers it too and does not use it."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def device_count() -> int:
        return visible_devices()

    @staticmethod
    def current_device() -> int:
        return torch.empty(0, device=device_name()).device.index or 0

    @staticmethod
    def is_initialized() -> bool:
        return True

    @staticmethod
    def _lazy_init() -> None:
        pass

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        pass  # the device draws random numbers on the host: torch.manual_seed seeds them


def load() -> None:
    torch.ops.load_library(str(build()))
    if getattr(torch, device_name(), None) is None:
        torch._register_device_module(device_name(), _DeviceModule())


load()
