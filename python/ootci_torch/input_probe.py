"""The input probe (`ootci discover --probe-inputs K`, docs/select.md).

With OOTCI_PROBE_INPUTS=<shift> every device tensor a test draws as input (what make_tensor and
an OpInfo's sample inputs return; input_generation.py calls this) comes out moved by that shift,
as a value bug in an op used only to make inputs would move it: floats by the shift, both parts
of a complex value by it, integers by its sign times at least one, bools negated. A test that
passes plainly but fails so depends on the values it draws; selection keeps it with the tests
that call a changed op themselves."""
import math

from ootci_torch import recording_config

_DEPTH = 8  # how deep a sample's nested lists and dicts are searched for tensors


def shift_inputs(value, shift) -> None:
    """Moves, in place, each device tensor in value (a tensor, a SampleInput or ErrorInput, or
    lists, tuples and dicts of them). A tensor the device cannot move stays as it is."""
    _shift(value, shift, set(), 0)


def _shift(value, shift, seen, depth):
    import torch
    if depth > _DEPTH or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        if (value.device.type != recording_config.device_type() or value.is_sparse
                or value.numel() == 0):
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
        _shift(item, shift, seen, depth + 1)
