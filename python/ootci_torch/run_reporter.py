"""pytest plugin that `ootci run` loads into every pytest process it starts.

It narrows the session to the tests the runner asks for and reports each test the moment it
starts and finishes, as JSON lines appended (and flushed) to $OOTCI_RUN_EVENTS. The runner reads
that file while the process runs: a test that started but never finished is the one that crashed
or hung, and every finished result is stored before the process can take it down with it.

Events: {"e": "collected", "tests": [id, ...]}, {"e": "start", "id", "mode", "op", "dtype"},
        {"e": "called", "id", "outcome", ...} (the call phase is over; teardown may still crash),
        {"e": "result", "id", "outcome", "duration", "mode", "op", "dtype", "error_class", "message"},
        {"e": "collect_error", "message": text}
"""
import json
import os
import re

import pytest

from ootci_torch import plan as _plan

_MESSAGE_LIMIT = 2000
_events = None
_items = {}     # nodeid -> (test id, plan properties)
_reports = {}   # nodeid -> [TestReport, ...]


def _text(value):
    # A lone surrogate (undecodable bytes in a message) is not valid JSON for a strict reader.
    return str(value).encode("utf-8", "replace").decode("utf-8")[:_MESSAGE_LIMIT]


def _emit(event):
    _events.write(json.dumps(event) + "\n")
    _events.flush()


def _props(nodeid):
    tid, props = _items[nodeid]
    return {"id": tid, "mode": props.get("ootci.mode", ""), "op": props.get("ootci.op", ""),
            "dtype": props.get("ootci.dtype", "")}


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


def pytest_configure(config):
    global _events
    path = os.environ.get("OOTCI_RUN_EVENTS")
    if path:
        _events = open(path, "a", encoding="utf-8")


def pytest_collectreport(report):
    if _events is not None and report.failed:
        _emit({"e": "collect_error", "message": _text(str(report.longrepr)[-_MESSAGE_LIMIT:])})


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    if _events is None:
        return
    only, skip = _read_ids("OOTCI_RUN_ONLY"), _read_ids("OOTCI_RUN_SKIP") or set()
    kept, dropped = [], []
    for item in items:
        tid = test_id(item)
        if (only is not None and tid not in only) or tid in skip:
            dropped.append(item)
            continue
        _items[item.nodeid] = (tid, dict(item.user_properties))
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    _emit({"e": "collected", "tests": [_items[i.nodeid][0] for i in kept]})


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
            _emit({"e": "called", **_props(report.nodeid), "outcome": outcome,
                   "duration": sum(r.duration for r in _reports[report.nodeid]),
                   "error_class": error_class, "message": _text(message)})


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
    _emit({"e": "result", **_props(nodeid), "outcome": outcome,
           "duration": sum(r.duration for r in reports),
           "error_class": error_class, "message": _text(message)})
