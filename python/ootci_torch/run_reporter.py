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
those of them it reached only while generating its inputs (make_tensor, sample inputs;
op_record.py).

OOTCI_RUN_ONLY names a file of test ids to run, OOTCI_RUN_ONLY_BASES one of "relpath::Class::method"
lines whose variants run; with both, a test runs if either names it. OOTCI_RUN_SKIP ids never run.
OOTCI_RUN_PART="K/N" (a sharded discovery, `ootci discover --shard K/N`) keeps part K of the file's
variants: those OOTCI_RUN_PART_PLACED (lines "id<TAB>part", from recorded durations) places there,
and of the rest those whose id's CRC-32 is K-1 modulo N, so that every machine that collects the
same file splits it alike with no list to share. OOTCI_RUN_SUBPART="J/W" (discovery's workers
sharing a file) keeps, of that, those OOTCI_RUN_SUBPART_PLACED (lines "id<TAB>worker", the
variants placed in part K, placed again among the W workers by their durations) places at J, and
of the rest those whose CRC-32 divided by N is J-1 modulo W.
OOTCI_RUN_MULTI_DEVICE=defer (a device pool, run.devices): tests that need more than one device
(deviceCountAtLeast) do not run here; the "collected" event lists them as "multi_device", and the
runner runs them alone with every device.

Once pytest is done, the process leaves with its exit status and skips the interpreter's teardown,
as a forked child does (end_process): nothing it reports comes later, and a death there would be
pinned on a file whose tests all passed.

State lives where pytest's own plugins keep it: the process's on a Reporter object registered as
a plugin at configure (config.stash[REPORTER]), each test's on its item's stash.
"""
import json
import os
import re
import sys
import zlib

import pytest

from ootci_torch import input_generation, op_observer, op_recorder, recording_config
from ootci_torch import plan as _plan
from ootci_torch.op_record import OpRecord

_MESSAGE_LIMIT = 2000


class _Test:
    """What the reporter keeps of one test it reports (item.stash[_TEST])."""

    def __init__(self, test_id, props):
        self.id = test_id
        self.props = props     # the plan's properties ("ootci.mode", ...)
        self.reports = []      # its TestReports so far: setup, call, teardown
        self.ops = OpRecord()  # what its phases recorded so far (OOTCI_RECORD_OPS=1)

    def event(self, kind) -> dict:
        p = self.props
        return {"e": kind, "id": self.id, "mode": p.get("ootci.mode", ""),
                "op": p.get("ootci.op", ""), "dtype": p.get("ootci.dtype", ""),
                "base": p.get("ootci.base", "")}


REPORTER = pytest.StashKey["Reporter"]()  # config.stash: this process's reporter
_TEST = pytest.StashKey[_Test]()          # item.stash: set on the tests this process reports
_TEST_ID = pytest.StashKey[str]()         # item.stash: the test id, computed once (remember_ids)


def _text(value):
    # A lone surrogate (undecodable bytes in a message) is not valid JSON for a strict reader.
    return str(value).encode("utf-8", "replace").decode("utf-8")[:_MESSAGE_LIMIT]


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


def remember_ids(items):
    """Computes each item's test id once (a fork server, before its children narrow)."""
    for item in items:
        item.stash[_TEST_ID] = test_id(item)


def reporter(config) -> "Reporter":
    return config.stash[REPORTER]


def pytest_configure(config):
    config.stash[REPORTER] = Reporter()
    config.pluginmanager.register(config.stash[REPORTER], "ootci-run-reporter")
    config.stash[REPORTER].start()


class Reporter:
    """The events of one pytest process; silent until start() finds $OOTCI_RUN_EVENTS."""

    def __init__(self):
        self.events = None
        self.record_ops = False
        self.exit_status = None  # pytest's, once its session has finished

    def start(self):
        """Opens $OOTCI_RUN_EVENTS; at configure, or in a fork server's child (fork_server.py)."""
        path = os.environ.get("OOTCI_RUN_EVENTS")
        if path:
            self.events = open(path, "a", encoding="utf-8")
            self.record_ops = recording_config.enabled()
            if self.record_ops and recording_config.recorder_kind() == "observer":
                op_observer.available()  # built now, not inside the first test's time
            self._mark_input_generators()

    def _mark_input_generators(self):
        if self.record_ops or recording_config.probe_shift() is not None:
            input_generation.mark_input_generators()

    def emit(self, event):
        self.events.write(json.dumps(event) + "\n")
        self.events.flush()

    def collect_error(self, message):
        self.emit({"e": "collect_error", "message": _text(message[-_MESSAGE_LIMIT:])})

    def pytest_collectreport(self, report):
        if self.events is not None and report.failed:
            self.collect_error(str(report.longrepr))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        self.narrow(config, items)

    def narrow(self, config, items):
        """Keeps the tests the runner asked for (in place) and reports them as collected."""
        if self.events is None:
            return
        only, skip = _read_ids("OOTCI_RUN_ONLY"), _read_ids("OOTCI_RUN_SKIP") or set()
        only_bases = _read_ids("OOTCI_RUN_ONLY_BASES")
        in_part = _part_filter()
        defer = os.environ.get("OOTCI_RUN_MULTI_DEVICE") == "defer"
        kept, dropped, multi_device = [], [], []
        for item in items:
            tid = item.stash.get(_TEST_ID, None) or test_id(item)
            props = dict(item.user_properties)
            if tid in skip or not _wanted(tid, props, only, only_bases) or not in_part(tid):
                dropped.append(item)
                continue
            if defer and _devices_needed(item) > 1:
                dropped.append(item)
                multi_device.append(tid)
                continue
            item.stash[_TEST] = _Test(tid, props)
            kept.append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        self._mark_input_generators()  # the test modules' own make_tensor names too
        event = {"e": "collected", "tests": [item.stash[_TEST].id for item in kept]}
        if multi_device:
            event["multi_device"] = multi_device
        self.emit(event)

    def _recorded(self, item):
        """Records the ops of one test phase when asked to; a hookwrapper body."""
        test = item.stash.get(_TEST, None)
        if not self.record_ops or test is None:
            yield
            return
        with op_recorder.Recording() as rec:
            yield
        if rec.record is not None:
            test.ops.add(rec.record)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._recorded(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._recorded(item)

    def _finished(self, test, kind, reports):
        """The "called" or "result" event of a test, from its reports so far."""
        outcome, error_class, message = _classify(reports)
        event = {**test.event(kind), "outcome": outcome,
                 "duration": sum(r.duration for r in reports),
                 "error_class": error_class, "message": _text(message)}
        if self.record_ops:
            event.update(test.ops.fields())
        return event

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """"start" before the test's setup, "result" once its teardown is reported; none if the
        protocol raises (an interrupt), as no result was logged."""
        test = item.stash.get(_TEST, None)
        if test is not None:
            self.emit(test.event("start"))
        outcome = yield
        if test is not None and outcome.excinfo is None:
            self.emit(self._finished(test, "result", test.reports))
            item.stash[_TEST] = _Test(test.id, test.props)  # its reports and ops are done with

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self, session):
        yield
        self.exit_status = int(session.exitstatus)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        """A process the runner started ends once pytest is done, as a forked child does
        (fork_server.py): everything it reports is written by then, and the interpreter's teardown
        could only kill it by chance (see end_process)."""
        if self.events is not None and self.exit_status is not None:
            end_process(self.exit_status)

    # Outermost: the report is final here, after every other wrapper (skipping's xfail) is done.
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if call.excinfo is not None:
            error = _raised(call.excinfo.value)
            report.ootci_error = (type(error).__name__, str(error))
        test = item.stash.get(_TEST, None)
        if test is not None:
            test.reports.append(report)
            if report.when == "call":
                self.emit(self._finished(test, "called", test.reports))


def end_process(status):
    """Leaves with pytest's exit status, its output flushed, without tearing the interpreter down.
    Every event, the JUnit file and the summary are written by now; what the teardown adds is
    chance: torch's autograd device threads, started by the process's first backward on the
    device, may still wait for the GIL when the interpreter finalizes, which aborts the process
    ("terminate called without an active exception", pytorch/pytorch#38230), and the runner
    would report that death against a file whose tests all passed. atexit handlers do not run."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _raised(error):
    """The error a test raised. Upstream's assertEqual (torch.testing._comparison) raises an
    exception met while comparing as RuntimeError("Comparing ... resulted in the unexpected
    exception above") from it: the cause is what failed. On torch 2.x, whose make_tensor builds
    inputs on the CPU and copies them, a device op the comparison needs is often the first one a
    test reaches, and its error (a missing kernel, say) is what a bucket or a probe must see."""
    cause = error.__cause__
    if type(error) is RuntimeError and cause is not None and str(error).startswith("Comparing"):
        return cause
    return error


def _devices_needed(item):
    """deviceCountAtLeast(N) marks the test function; the variant's wrapper carries it over."""
    return getattr(getattr(item, "obj", None), "num_required_devices", 1) or 1


def _part_filter():
    """Whether a test id is in this process's part of the file (OOTCI_RUN_PART and
    OOTCI_RUN_SUBPART); every test without them."""
    spec, sub = os.environ.get("OOTCI_RUN_PART"), os.environ.get("OOTCI_RUN_SUBPART")
    if not spec and not sub:
        return lambda tid: True
    k, n = (int(x) for x in (spec or "1/1").split("/"))
    j, w = (int(x) for x in (sub or "1/1").split("/"))
    placed = _placement(os.environ.get("OOTCI_RUN_PART_PLACED"))
    among_workers = _placement(os.environ.get("OOTCI_RUN_SUBPART_PLACED"))

    def in_part(tid):
        crc = zlib.crc32(tid.encode("utf-8"))
        return (placed.get(tid, crc % n + 1) == k
                and among_workers.get(tid, (crc // n) % w + 1) == j)
    return in_part


def _placement(path):
    """{test id: part} from a file of "id<TAB>part" lines; {} without one."""
    placed = {}
    if path:
        with open(path, encoding="utf-8") as f:
            for line in f.read().split("\n"):
                if line:
                    tid, part = line.rsplit("\t", 1)
                    placed[tid] = int(part)
    return placed


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
