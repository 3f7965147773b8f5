"""What differs between the PyTorch versions ootci_torch runs on, in one place.

Tested on Debian 12's torch 1.13.1 and Debian 13's torch 2.6.0 (scripts/lib/torch_bed.sh). Every
other module is written against what both have; each difference below names the upstream change
it answers, so it can go once the oldest torch ootci supports has it.
"""
import sys

_CDT = "torch.testing._internal.common_device_type"

# Upstream's test bases name PrivateUse1 this way since torch 2.1 (PrivateUse1TestBase), and map
# the backend's own name to it in only_for/except_for (filter_desired_device_types).
PRIVATEUSE1 = "privateuse1"


def privateuse1_backend_name() -> str:
    """The name the PrivateUse1 device goes by: torch 2.x lets a backend rename it
    (torch.utils.rename_privateuse1_backend, torch 2.1); torch 1.13 cannot rename it, and
    calls it "privateuseone"."""
    import torch
    get = getattr(torch._C, "_get_privateuse1_backend_name", None)
    return get() if get is not None else "privateuseone"


def device_aliases(device: str) -> set:
    """The names an only_for/except_for list may give the plan's device by."""
    return {device, PRIVATEUSE1}


def adopt_test_bases(ours, device: str) -> None:
    """Makes `ours` the one test base of the plan's device in common_device_type, which is being
    imported while TORCH_TEST_DEVICES files run.

    torch >= 2.1 appends its own PrivateUse1TestBase to the device bases when the backend's Python
    module says it is available at the moment common_device_type is imported (torch 2.1):
    whether that happened depends on import order, and it would instantiate every test a second
    time under other names. It goes, as Torch Spyre's framework removes it too.

    torch 2.x's filter_desired_device_types also renames the backend's name to "privateuse1" in
    only_for/except_for lists, so `PYTORCH_TESTING_DEVICE_ONLY_FOR=<device>`
    would filter `ours`, whose device_type is the backend's name, out. The filter keeps it
    whenever the lists admit the device by either name."""
    module = sys.modules[_CDT]
    builtin = getattr(module, "PrivateUse1TestBase", None)
    if builtin is not None:
        module.device_type_test_bases[:] = [
            b for b in module.device_type_test_bases if b is not builtin]
    original = getattr(module, "filter_desired_device_types", None)
    if original is None or getattr(original, "_ootci_keeps", None) is ours:
        return
    names = device_aliases(device)

    def filter_desired_device_types(device_type_test_bases, except_for=None, only_for=None):
        device_type_test_bases = list(device_type_test_bases)
        kept = original(device_type_test_bases, except_for, only_for)
        admitted = (not only_for or names & set(only_for)) and not names & set(except_for or ())
        if ours in device_type_test_bases and ours not in kept and admitted:
            kept.append(ours)
        return kept

    filter_desired_device_types._ootci_keeps = ours
    module.filter_desired_device_types = filter_desired_device_types
