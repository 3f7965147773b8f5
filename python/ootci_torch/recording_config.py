"""What the op recorder (op_recorder.py) records, and on which device: the switches `ootci run`
and `ootci discover` set in the environment, and the device's backend dispatch key, which both
recorders need.

No torch at import: run_reporter.py reads the switches in every run, recording or not."""
import os

_dispatch_keys = {}  # device type -> its backend dispatch key, or ""


def enabled() -> bool:
    """Whether this process records the device ops of its tests ($OOTCI_RECORD_OPS=1)."""
    return os.environ.get("OOTCI_RECORD_OPS") == "1"


def recorder_kind() -> str:
    """'observer' (default) or 'mode', from $OOTCI_RECORDER."""
    return "mode" if os.environ.get("OOTCI_RECORDER") == "mode" else "observer"


def probe_shift():
    """The shift of $OOTCI_PROBE_INPUTS (input_probe.py), or None when not probing."""
    value = os.environ.get("OOTCI_PROBE_INPUTS")
    return float(value) if value else None


def device_type() -> str:
    """$OOTCI_DEVICE_TYPE, else the plan's device (the string torch.device(...).type gives)."""
    explicit = os.environ.get("OOTCI_DEVICE_TYPE")
    if explicit:
        return explicit
    from ootci_torch import plan as _plan
    return _plan.current().device_type


def dispatch_key(device) -> str:
    """The backend dispatch key whose kernel table the device's calls use, read from an empty
    tensor's key set, so that no device is named here; "" when it cannot be read. Cached."""
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
