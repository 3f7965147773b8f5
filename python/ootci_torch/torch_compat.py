"""What differs between the PyTorch versions ootci_torch runs on, in one place.

Tested on Debian 12's torch 1.13.1 and Debian 13's torch 2.6.0 (scripts/lib/torch_bed.sh). Every
other module is written against what both have; each difference below names the upstream change
it answers, so it can go once the oldest torch ootci supports has it.
"""
import sys

_CDT = "torch.testing._internal.common_device_type"


def device_aliases(device: str) -> set:
    """The names an only_for/except_for list may give the plan's device by: its own, and since
    torch 2.1 the generic name of upstream's PrivateUse1TestBase, to which torch 2.x's
    filter_desired_device_types renames a backend's own name."""
    builtin = getattr(sys.modules.get(_CDT), "PrivateUse1TestBase", None)
    return {device} | ({builtin.device_type} if builtin is not None else set())


def adopt_test_bases(ours, device: str) -> None:
    """Makes `ours` the one test base of the plan's device in common_device_type, which is being
    imported while TORCH_TEST_DEVICES files run.

    Since torch 2.1, common_device_type appends its own PrivateUse1TestBase to the device bases
    when the backend's Python module says it is available at the moment common_device_type is
    imported: whether that happened depends on import order, and it would instantiate every
    test a second time under other names. It goes (other out-of-tree
    frameworks remove it too).

    torch 2.x's filter_desired_device_types also renames the backend's own name to that base's
    generic one in only_for/except_for lists, so `PYTORCH_TESTING_DEVICE_ONLY_FOR=<device>` would
    filter `ours`, whose device_type is the backend's name, out. The filter keeps it whenever the
    lists admit the device by either name."""
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
