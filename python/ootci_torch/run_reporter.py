"""pytest plugin that `ootci run` loads into every pytest process it starts.

It narrows the session to the tests the runner asks for and reports each test the moment it
starts and finishes, as JSON lines appended (and flushed) to $OOTCI_RUN_EVENTS. The runner reads
that file while the process runs: a test that started but never finished is the one that crashed
or hung, and every finished result is stored before the process can take it down with it.

Events: {"e": "collected", "tests": [id, ...]},
        {"e": "start", "id", "mode", "op", "dtype", "base"},
        {"e": "called", "id", "outcome", ...} (the call phase is over; teardown may still crash),
        {"e": "result", "id", "outcome", "duration", "mode", "op", "dtype", "base", "error_class",
         "message", "ops", "op_dtypes", "input_op_dtypes"},
        {"e": "collect_error", "message": text}
"base" is the config name of the variant ("Class::method"). "ops" (only with OOTCI_RECORD_OPS=1)
lists the ops the test called on the device during setup and call (op_recorder.py), and
"op_dtypes" the dtypes it called them with ("aten::add.Tensor:float32"), and "input_op_dtypes"
those of them it reached only while generating its inputs (make_tensor, sample inputs).

OOTCI_RUN_ONLY names a file of test ids to run, OOTCI_RUN_ONLY_BASES one of "relpath::Class::method"
lines whose variants run; with both, a test runs if either names it. OOTCI_RUN_SKIP ids never run.
OOTCI_RUN_MULTI_DEVICE=defer (a device pool, run.devices): tests that need more than one device
(deviceCountAtLeast) do not run here; the "collected" event lists them as "multi_device", and the
runner runs them alone with every device.
"""
import json
import os
import re

import pytest

from ootci_torch import op_recorder as _op_recorder
from ootci_torch import plan as _plan

_MESSAGE_LIMIT = 2000
_events = None
_items = {}     # nodeid -> (test id, plan properties)
_reports = {}   # nodeid -> [TestReport, ...]
_ops = {}       # nodeid -> set of ops recorded so far (OOTCI_RECORD_OPS=1)
_op_dtypes = {}  # nodeid -> set of "op:dtype" pairs recorded so far
_body_dtypes = {}  # nodeid -> those of them seen outside input generation in some phase
_input_dtypes = {}  # nodeid -> those seen only inside it in some phase
_record_ops = False


def _text(value):
    # A lone surrogate (undecodable bytes in a message) is not valid JSON for a strict reader.
    return str(value).encode("utf-8", "replace").decode("utf-8")[:_MESSAGE_LIMIT]


def _emit(event):
    _events.write(json.dumps(event) + "\n")
    _events.flush()


def _props(nodeid):
    tid, props = _items[nodeid]
    return {"id": tid, "mode": props.get("ootci.mode", ""), "op": props.get("ootci.op", ""),
            "dtype": props.get("ootci.dtype", ""), "base": props.get("ootci.base", "")}


def _read_ids(env_name):
    path = os.environ.get(env_name)
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        return {line for line in f.read().split("\n") if line}


def test_id(item) -> str:
    fp = _plan.current().file_for(str(item.path))
    relpath = fp.relpath if fp else os.path.relpath(str(item.path))
    parts = [relpath] + ([item.cls.__name__] if item.cls is not None else []) + [item.name]
    return "::".join(parts)


def start_events():
    """Opens $OOTCI_RUN_EVENTS; at configure, or in a fork server's child (fork_server.py)."""
    global _events, _record_ops
    path = os.environ.get("OOTCI_RUN_EVENTS")
    if path:
        _events = open(path, "a", encoding="utf-8")
        _record_ops = _op_recorder.enabled()
        if _record_ops and _op_recorder.recorder_kind() == "observer":
            _op_recorder.observer_available()  # built now, not inside the first test's time
        if _record_ops or _op_recorder.probe_shift() is not None:
            _op_recorder.mark_input_generators()


def pytest_configure(config):
    start_events()


def remember_ids(items):
    """Computes each item's test id once (a fork server, before its children narrow)."""
    for item in items:
        item._ootci_test_id = test_id(item)


def collect_error(message):
    _emit({"e": "collect_error", "message": _text(message[-_MESSAGE_LIMIT:])})


def pytest_collectreport(report):
    if _events is not None and report.failed:
        collect_error(str(report.longrepr))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    narrow(config, items)


def narrow(config, items):
    """Keeps the tests the runner asked for (in place) and reports them as collected."""
    if _events is None:
        return
    only, skip = _read_ids("OOTCI_RUN_ONLY"), _read_ids("OOTCI_RUN_SKIP") or set()
    only_bases = _read_ids("OOTCI_RUN_ONLY_BASES")
    defer = os.environ.get("OOTCI_RUN_MULTI_DEVICE") == "defer"
    kept, dropped, multi_device = [], [], []
    for item in items:
        tid = getattr(item, "_ootci_test_id", None) or test_id(item)
        props = dict(item.user_properties)
        if tid in skip or not _wanted(tid, props, only, only_bases):
            dropped.append(item)
            continue
        if defer and _devices_needed(item) > 1:
            dropped.append(item)
            multi_device.append(tid)
            continue
        _items[item.nodeid] = (tid, props)
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    if _record_ops or _op_recorder.probe_shift() is not None:
        _op_recorder.mark_input_generators()  # the test modules' own make_tensor names too
    event = {"e": "collected", "tests": [_items[i.nodeid][0] for i in kept]}
    if multi_device:
        event["multi_device"] = multi_device
    _emit(event)


def _devices_needed(item):
    """deviceCountAtLeast(N) marks the test function; the variant's wrapper carries it over."""
    return getattr(getattr(item, "obj", None), "num_required_devices", 1) or 1


def _wanted(tid, props, only, only_bases):
    """No list: every test. Otherwise a test runs if either list names it (its id, its base)."""
    if only is None and only_bases is None:
        return True
    return (only is not None and tid in only) or (
        only_bases is not None and _base_id(tid, props) in only_bases)


def _base_id(tid, props):
    """'relpath::Class::method' for a test id and its properties; '' without a known base."""
    base = props.get("ootci.base")
    return f"{tid.split('::', 1)[0]}::{base}" if base else ""


def _input_only(nodeid):
    """The pairs a test reached only while generating its inputs, in every phase."""
    return sorted(_input_dtypes.get(nodeid, set()) - _body_dtypes.get(nodeid, set()))


def _recorded(item):
    """Records the ops of one test phase when asked to; a hookwrapper body."""
    if not _record_ops or item.nodeid not in _items:
        yield
        return
    with _op_recorder.Recording() as rec:
        yield
    if rec.ops is not None:
        _ops.setdefault(item.nodeid, set()).update(rec.ops)
        pairs, inputs = set(rec.op_dtypes or ()), set(rec.input_op_dtypes or ())
        _op_dtypes.setdefault(item.nodeid, set()).update(pairs)
        _body_dtypes.setdefault(item.nodeid, set()).update(pairs - inputs)
        _input_dtypes.setdefault(item.nodeid, set()).update(inputs)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _recorded(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _recorded(item)


def pytest_runtest_logstart(nodeid, location):
    if _events is not None and nodeid in _items:
        _emit({"e": "start", **_props(nodeid)})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None:
        report.ootci_error = (call.excinfo.typename, str(call.excinfo.value))


def pytest_runtest_logreport(report):
    if _events is not None and report.nodeid in _items:
        _reports.setdefault(report.nodeid, []).append(report)
        if report.when == "call":
            outcome, error_class, message = _classify(_reports[report.nodeid])
            event = {"e": "called", **_props(report.nodeid), "outcome": outcome,
                     "duration": sum(r.duration for r in _reports[report.nodeid]),
                     "error_class": error_class, "message": _text(message)}
            if _record_ops:
                event["ops"] = sorted(_ops.get(report.nodeid, ()))
                event["op_dtypes"] = sorted(_op_dtypes.get(report.nodeid, ()))
                event["input_op_dtypes"] = _input_only(report.nodeid)
            _emit(event)


def _classify(reports):
    """(outcome, error_class, message) from the setup/call/teardown reports of one test."""
    by_phase = {r.when: r for r in reports}
    outcome = ("passed", "", "")
    for phase in ("setup", "call"):
        r = by_phase.get(phase)
        if r is None or r.passed and not hasattr(r, "wasxfail"):
            continue
        outcome = _phase_outcome(r, phase)
        break
    teardown = by_phase.get("teardown")
    if teardown is not None and teardown.failed and outcome[0] != "failed":
        # A failing teardown is an error even after a pass, a skip or an expected failure.
        return _phase_outcome(teardown, "teardown")
    return outcome


def _phase_outcome(r, phase):
    if hasattr(r, "wasxfail"):
        if r.skipped:
            return "xfailed", "", str(r.wasxfail)
        if r.passed:
            return "xpassed", "", ""
    if r.skipped:
        return "skipped", "", r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
    text = str(r.longrepr)
    if text.startswith("[XPASS(strict)]"):
        return "failed", "XPASS(strict)", text
    error_class, message = getattr(r, "ootci_error", ("", text))
    return ("failed" if phase == "call" else "error"), error_class or _guess_error_class(text), message


def _guess_error_class(text):
    m = re.search(r"^E\s+(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt))\b", text, re.M)
    return m.group(1).rsplit(".", 1)[-1] if m else ""


def pytest_runtest_logfinish(nodeid, location):
    if _events is None or nodeid not in _items:
        return
    reports = _reports.pop(nodeid, [])
    outcome, error_class, message = _classify(reports)
    event = {"e": "result", **_props(nodeid), "outcome": outcome,
             "duration": sum(r.duration for r in reports),
             "error_class": error_class, "message": _text(message)}
    if _record_ops:
        event["ops"] = sorted(_ops.pop(nodeid, ()))
        event["op_dtypes"] = sorted(_op_dtypes.pop(nodeid, ()))
        event["input_op_dtypes"] = _input_only(nodeid)
        _body_dtypes.pop(nodeid, None)
        _input_dtypes.pop(nodeid, None)
    _emit(event)
