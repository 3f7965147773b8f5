"""Acceptance tests of `ootci run` (issue: backend runner): the real runner on real upstream files
and on the project's own fault fixture, with the reference backend."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from conftest import OOTCI, SOURCE_DIR

FIXTURE = SOURCE_DIR / "tests" / "backend" / "fixtures" / "test_runner_fixture.py"
FIXTURE_REL = str(FIXTURE)  # outside TORCH_ROOT and device_root, so the relpath is absolute
RUNNER_CLASS = "TestRunnerFixturePRIVATEUSEONE"


def fixture_config(*names, unlisted="skip"):
    return ("test_suite_config:\n  files:\n"
            f"    - path: {FIXTURE}\n"
            f"      unlisted_test_mode: {unlisted}\n"
            "      tests:\n"
            f"        - names: [{', '.join(names)}]\n")


class Ran:
    def __init__(self, ws, proc):
        self.ws = ws
        self.returncode = proc.returncode
        self.output = proc.stdout + proc.stderr
        self.run_id = next((line.split()[1] for line in proc.stdout.splitlines()
                            if line.startswith("run ")), None)
        assert self.run_id, self.output[-3000:]

    def results(self):
        db = sqlite3.connect(self.ws.path / ".ootci" / "evidence.db")
        rows = db.execute("SELECT test_id, outcome, error_class, reruns, flaky, mode, message "
                          "FROM results WHERE run_id = ?", (self.run_id,)).fetchall()
        # "Class::name" for a test, the file's relpath for a whole-file error.
        return {"::".join(r[0].split("::")[1:]) or r[0]: r[1:] for r in rows}

    def outcomes(self):
        return {k: v[0] for k, v in self.results().items()}

    def run_row(self):
        db = sqlite3.connect(self.ws.path / ".ootci" / "evidence.db")
        return db.execute("SELECT status, verdict, manifest, shard FROM runs WHERE id = ?",
                          (self.run_id,)).fetchone()


def run(ws, *args, env=None, timeout=600):
    proc = subprocess.run([str(OOTCI), "run", "--config", "ootci.yaml", *args], capture_output=True,
                          text=True, cwd=ws.path, timeout=timeout, env={**os.environ, **(env or {})})
    return Ran(ws, proc)


@pytest.fixture
def state(tmp_path):
    d = tmp_path / "fixture-state"
    d.mkdir()
    return {"OOTCI_FIXTURE_STATE": str(d), "OOTCI_FIXTURE_LOG": str(d / "ran.log")}


def executions(state):
    """How often each fixture test ran; "import": how many interpreters imported the fixture."""
    path = state["OOTCI_FIXTURE_LOG"]
    return Counter(open(path).read().split()) if os.path.exists(path) else Counter()


def test_end_to_end_on_upstream_files_junit_matches_evidence_and_judge_follows_modes(ws, state):
    ws.config("test_suite_config:\n  files:\n"
              "    - path: ${TORCH_ROOT}/test/test_view_ops.py\n"
              "      unlisted_test_mode: skip\n"
              "      tests:\n"
              "        - names: [TestViewOps::test_view_view, TestViewOps::test_reshape_view]\n"
              "        - names: [TestViewOps::test_unfold_view]\n          mode: xfail\n"
              "    - path: ${TORCH_ROOT}/test/test_binary_ufuncs.py\n"
              "      unlisted_test_mode: skip\n"
              "      tests:\n"
              "        - names: [TestBinaryUfuncs::test_contig_vs_every_other]\n"
              "  global:\n"
              "    supported_dtypes: [{name: float32}]\n"
              "    supported_ops: [add, mul]\n", name="configs/upstream.yaml")
    ws.config(fixture_config("TestRunnerFixture::test_pass_a", "TestRunnerFixture::test_pass_b"),
              name="configs/fixture.yaml")
    ran = run(ws, env=state)
    assert ran.returncode == 0, ran.output[-3000:]
    outcomes = ran.outcomes()
    assert Counter(outcomes.values()) == Counter({"passed": 6, "xfailed": 1})
    assert outcomes["TestViewOpsPRIVATEUSEONE::test_unfold_view_privateuseone"] == "xfailed"
    status, verdict, manifest, _ = ran.run_row()
    assert (status, verdict) == ("finished", "success")
    manifest = json.loads(manifest)
    for key in ("plan_sha256", "config_hash", "python", "os", "cpu", "started", "ended"):
        assert manifest[key], key
    # Read from torch/version.py without importing torch: the same string as torch.__version__.
    imported = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert manifest["upstream"]["torch_version"] == imported
    assert manifest["upstream"]["suite_sha256"]

    junit = ET.parse(ws.path / ".ootci" / "runs" / ran.run_id / "junit.xml").getroot()
    cases = junit.findall(".//testcase")
    assert len(cases) == len(outcomes)
    assert len([c for c in cases if c.find("skipped") is not None]) == 1  # the xfail
    assert not [c for c in cases if c.find("failure") is not None or c.find("error") is not None]

    # The same plan with the failing test made mandatory: the judge says failure.
    ws.config(ws.path.joinpath("configs/upstream.yaml").read_text().replace(
        "mode: xfail", "mode: mandatory_success"), name="configs/upstream.yaml")
    red = run(ws, env=state)
    assert red.returncode == 1
    assert red.run_row()[1] == "failure"
    assert red.outcomes()["TestViewOpsPRIVATEUSEONE::test_unfold_view_privateuseone"] == "failed"
    judged = subprocess.run([str(OOTCI), "judge", "--run", red.run_id, "--config", "ootci.yaml"],
                            capture_output=True, text=True, cwd=ws.path)
    assert judged.returncode == 1
    assert "test_unfold_view" in judged.stdout


def test_a_crashing_test_is_one_error_and_the_others_keep_their_outcome(ws, state):
    ws.ootci_yaml(env={"OOTCI_REF_CRASH_OPS": "sin"}, run={"reruns": 1})
    ws.config(fixture_config(*(f"TestRunnerFixture::test_{n}"
                               for n in ("pass_a", "pass_b", "fails", "pass_c")))
              + "        - names: [TestRunnerFixture::test_sin]\n          mode: xfail\n")
    ran = run(ws, env=state)
    results = ran.results()
    assert {k.split("::")[1]: v[0] for k, v in results.items()} == {
        "test_pass_a_privateuseone": "passed", "test_sin_privateuseone": "error",
        "test_pass_b_privateuseone": "passed", "test_fails_privateuseone": "failed",
        "test_pass_c_privateuseone": "passed"}
    crash = results[f"{RUNNER_CLASS}::test_sin_privateuseone"]
    assert crash[1] == "SIGSEGV"
    assert crash[4] == "xfail"  # the crashed test keeps its mode, so the judge reads it right
    assert "also when run alone" in crash[5]
    assert results[f"{RUNNER_CLASS}::test_fails_privateuseone"][2] == 1  # rerun once, still failing
    assert ran.returncode == 1


def test_a_hanging_test_times_out_and_the_run_finishes(ws, state):
    ws.ootci_yaml(env={"OOTCI_REF_HANG_OPS": "cos"}, run={"test_timeout_s": 4, "reruns": 0})
    ws.config(fixture_config("TestRunnerFixture::test_pass_a", "TestRunnerFixture::test_cos",
                             "TestRunnerFixture::test_pass_b"))
    ran = run(ws, env=state)
    results = ran.results()
    assert results[f"{RUNNER_CLASS}::test_cos_privateuseone"][:2] == ("error", "Timeout")
    assert results[f"{RUNNER_CLASS}::test_pass_a_privateuseone"][0] == "passed"
    assert results[f"{RUNNER_CLASS}::test_pass_b_privateuseone"][0] == "passed"
    assert ran.run_row()[:2] == ("finished", "failure")


def test_a_hung_test_costs_at_most_the_limit_its_recorded_duration_gives(ws, state):
    # Issue 35: a first, healthy run records test_cos at a fraction of a second; when cos then
    # hangs, the test is killed at the floor (3 s here), not at test_timeout_s (900).
    ws.config(fixture_config("TestRunnerFixture::test_pass_a", "TestRunnerFixture::test_cos"))
    ws.ootci_yaml(run={"test_timeout_s": 900, "test_timeout_floor_s": 3, "reruns": 0})
    assert run(ws, env=state).run_row()[:2] == ("finished", "success")
    ws.ootci_yaml(env={"OOTCI_REF_HANG_OPS": "cos"},
                  run={"test_timeout_s": 900, "test_timeout_floor_s": 3, "reruns": 0})
    results = run(ws, env=state).results()
    outcome, error_class, *_, message = results[f"{RUNNER_CLASS}::test_cos_privateuseone"]
    assert (outcome, error_class) == ("error", "Timeout")
    assert message.startswith("ran longer than its limit of 3 s (10 × its recorded "), message
    assert "raised to test_timeout_floor_s=3)" in message.splitlines()[0], message
    assert results[f"{RUNNER_CLASS}::test_pass_a_privateuseone"][0] == "passed"


def test_a_test_waiting_on_a_dead_device_daemon_is_killed_soon_and_confirmed_alone(ws, state):
    # Issue 36: OpenReg's daemon dies when an op raises in it and the test waits for its answer
    # forever. The runner sees the dead, unreaped helper and kills the test after
    # run.dead_helper_grace_s, long before its limit (600 s here, which would be a Timeout).
    ws.ootci_yaml(run={"test_timeout_s": 600, "dead_helper_grace_s": 2, "reruns": 0})
    # Tests run in the order of their names: test_wait_for_daemon comes after the other two.
    ws.config(fixture_config("TestRunnerFixture::test_pass_a", "TestRunnerFixture::test_pass_b",
                             "TestRunnerFixture::test_wait_for_daemon"))
    ran = run(ws, env={**state, "OOTCI_FIXTURE_DAEMON_DIES": "always"}, timeout=300)
    results = ran.results()
    outcome, error_class, *_, message = results[f"{RUNNER_CLASS}::test_wait_for_daemon_privateuseone"]
    assert (outcome, error_class) == ("error", "HelperDied"), message
    first = message.splitlines()[0]
    # The same death reads the same in every test (no pid, the grace as configured), so the
    # report groups such tests as one cause.
    assert re.fullmatch(r"a process the test process started \([^()]+\) exited with status 1, "
                        r"and 2 s later the test was still waiting on it "
                        r"\(run\.dead_helper_grace_s\): killed; run alone, the same", first), first
    assert "pid" not in first, first
    assert results[f"{RUNNER_CLASS}::test_pass_a_privateuseone"][0] == "passed"
    assert results[f"{RUNNER_CLASS}::test_pass_b_privateuseone"][0] == "passed"
    assert ran.run_row()[:2] == ("finished", "failure")

    # A daemon that dies only after other tests: alone the test passes, and keeps that result.
    ran = run(ws, env={**state, "OOTCI_FIXTURE_DAEMON_DIES": "after_others"}, timeout=300)
    outcome, error_class, *_, message = ran.results()[
        f"{RUNNER_CLASS}::test_wait_for_daemon_privateuseone"]
    assert (outcome, error_class) == ("passed", ""), message
    assert message.startswith("a process the test process started"), message
    assert message.endswith("; run again alone, its helpers lived: "), message
    assert ran.run_row()[:2] == ("finished", "success")

    # A daemon that dies once, then a test that hangs alone: the message says how the run alone
    # ended (its limit, 8 s here), not only that the test did not report.
    ws.ootci_yaml(run={"test_timeout_s": 8, "dead_helper_grace_s": 2, "reruns": 0})
    ran = run(ws, env={**state, "OOTCI_FIXTURE_DAEMON_DIES": "then_hangs"}, timeout=300)
    outcome, error_class, *_, message = ran.results()[
        f"{RUNNER_CLASS}::test_wait_for_daemon_privateuseone"]
    assert (outcome, error_class) == ("error", "HelperDied"), message
    assert re.search(r"\(run\.dead_helper_grace_s\): killed; run alone, no helper died, and it ran "
                     r"longer than its limit of 8 s \(", message.splitlines()[0]), message


def test_a_stall_outside_any_test_is_killed_and_retried_once(ws, state):
    # The module hangs at import: no test is running, so the stall watchdog acts. 10 s, not less:
    # the retry must get through pytest's start and torch's import (silent, slow on a loaded
    # machine) to count its own import before the watchdog kills it again.
    ws.ootci_yaml(run={"stall_timeout_s": 10, "reruns": 0})
    ws.config(fixture_config("TestRunnerFixture::test_pass_a"))
    ran = run(ws, env={**state, "OOTCI_FIXTURE_HANG_AT_IMPORT": "1"})
    (file_row, row), = ran.results().items()
    assert row[:2] == ("error", "Timeout")
    assert "stall_timeout_s=10 outside any test, twice" in row[5]
    assert executions(state)["import"] == 2  # killed, retried once, killed again
    assert ran.run_row()[:2] == ("finished", "failure")


def test_a_crash_in_class_teardown_blames_no_test(ws, state):
    ws.ootci_yaml(env={"OOTCI_REF_CRASH_OPS": "tan"})
    # Names, not "TestTeardownFixture::test_.*": the class part is dropped, so that regex is every
    # test of the fixture, and all that follow the crash would run one process each (~50 s).
    # test_slow_00 comes after the crashing class: it still runs (one process per test).
    ws.config(fixture_config("TestTeardownFixture::test_one", "TestTeardownFixture::test_two",
                             "TestSlowFixture::test_slow_00"))
    ran = run(ws, env=state)
    results = ran.results()
    assert results["TestTeardownFixturePRIVATEUSEONE::test_one_privateuseone"][0] == "passed"
    assert results["TestTeardownFixturePRIVATEUSEONE::test_two_privateuseone"][0] == "passed"
    assert results["TestSlowFixturePRIVATEUSEONE::test_slow_00_privateuseone"][0] == "passed"
    file_rows = [v for k, v in results.items() if "Fixture" not in k]
    assert [r[:2] for r in file_rows] == [("error", "SIGSEGV")]
    assert "outside any test's call phase" in file_rows[0][5]


def test_a_death_in_the_interpreters_teardown_after_pytest_is_done_blames_nothing(ws, tmp_path):
    # Every test passed and pytest finished; then the interpreter's teardown aborts (an atexit
    # handler here, torch's autograd device threads in the field). Spawned or forked, the file
    # keeps its passes and no whole-file error turns the run red.
    ws.config(fixture_config("TestRunnerFixture::test_pass_a", "TestRunnerFixture::test_pass_b"))
    for isolation in ("spawn", "fork"):
        d = tmp_path / isolation
        d.mkdir()
        state = {"OOTCI_FIXTURE_STATE": str(d), "OOTCI_FIXTURE_LOG": str(d / "ran.log"),
                 "OOTCI_FIXTURE_ABORT_AT_EXIT": "1"}
        ran = run(ws, "--isolation", isolation, env=state)
        assert {k.split("::")[-1]: v[:2] for k, v in ran.results().items()} == {
            "test_pass_a_privateuseone": ("passed", ""),
            "test_pass_b_privateuseone": ("passed", "")}, (isolation, ran.output[-3000:])
        assert ran.returncode == 0 and ran.run_row()[:2] == ("finished", "success"), isolation
        assert executions(state)["import"] == 1, isolation  # one process, no file rerun


def test_a_test_that_fails_then_passes_is_flaky(ws, state):
    ws.config(fixture_config("TestRunnerFixture::test_flaky", "TestRunnerFixture::test_pass_a"))
    ran = run(ws, env=state)
    outcome, error_class, reruns, flaky, mode, _ = ran.results()[f"{RUNNER_CLASS}::test_flaky_privateuseone"]
    assert (outcome, reruns, flaky) == ("passed", 1, 1)
    assert ran.returncode == 0
    assert ran.run_row()[1] == "success"


def test_a_killed_run_resumes_without_running_a_test_twice(ws, state):
    ws.ootci_yaml(run={"workers": 1})
    ws.config(fixture_config("TestSlowFixture::test_slow_.*"))
    env = {**os.environ, **state, "OOTCI_FIXTURE_SLEEP": "0.4"}
    proc = subprocess.Popen([str(OOTCI), "run", "--config", "ootci.yaml"], cwd=ws.path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db_path = ws.path / ".ootci" / "evidence.db"
    deadline = time.time() + 120
    while time.time() < deadline:
        done = 0
        if db_path.exists():
            try:  # the file exists before the run's first transaction has created the tables
                done = sqlite3.connect(db_path).execute("SELECT count(*) FROM results").fetchone()[0]
            except sqlite3.OperationalError:
                pass
        if done >= 4:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)  # no chance to clean up: its pytest child dies with it
    proc.wait()
    db = sqlite3.connect(db_path)
    (run_id, status), = db.execute("SELECT id, status FROM runs").fetchall()
    assert status == "running"
    before = db.execute("SELECT count(*) FROM results").fetchone()[0]
    assert 4 <= before < 12

    resumed = run(ws, "--resume", run_id, env={**state, "OOTCI_FIXTURE_SLEEP": "0.4"})
    assert resumed.run_id == run_id
    assert resumed.returncode == 0, resumed.output[-3000:]
    assert Counter(resumed.outcomes().values()) == Counter({"passed": 12})
    ran = executions(state)
    del ran["import"]
    assert len(ran) == 12 and set(ran.values()) == {1}, ran  # none twice, none lost
    assert resumed.run_row()[:2] == ("finished", "success")


def test_fork_and_spawn_give_the_same_records_and_fork_imports_once(ws, tmp_path):
    # A crash (sin), a hang (cos), a failure, a flaky test and passes, under both isolations.
    ws.ootci_yaml(env={"OOTCI_REF_CRASH_OPS": "sin", "OOTCI_REF_HANG_OPS": "cos"},
                  run={"test_timeout_s": 4, "reruns": 1})
    ws.config(fixture_config(*(f"TestRunnerFixture::test_{n}" for n in
                               ("pass_a", "sin", "fails", "cos", "flaky", "pass_b"))))
    records, imports = {}, {}
    for isolation in ("spawn", "fork"):
        d = tmp_path / isolation
        d.mkdir()
        state = {"OOTCI_FIXTURE_STATE": str(d), "OOTCI_FIXTURE_LOG": str(d / "ran.log")}
        ran = run(ws, "--isolation", isolation, env=state)
        # outcome, error_class, reruns, flaky, mode: the record, without the free-text message
        records[isolation] = {k: v[:5] for k, v in ran.results().items()}
        imports[isolation] = executions(state)["import"]
        assert json.loads(ran.run_row()[2])["isolation"] == isolation
    assert records["fork"] == records["spawn"]
    assert {k.split("::")[1]: v[:2] for k, v in records["fork"].items()} == {
        "test_pass_a_privateuseone": ("passed", ""), "test_sin_privateuseone": ("error", "SIGSEGV"),
        "test_fails_privateuseone": ("failed", "AssertionError"),
        "test_cos_privateuseone": ("error", "Timeout"),
        "test_flaky_privateuseone": ("passed", ""), "test_pass_b_privateuseone": ("passed", "")}
    # spawn: each attempt (the first pass, the crash alone, the rest after the crash and after
    # the hang, the rerun) imports again; fork: one interpreter collects once for all of them.
    assert imports["fork"] == 1
    assert imports["spawn"] >= 4


def test_a_dead_fork_server_is_replaced_and_the_records_are_those_of_spawn(ws, tmp_path):
    ws.config(fixture_config(*(f"TestRunnerFixture::test_{n}" for n in
                               ("pass_a", "kills_fork_server", "pass_b"))))
    records = {}
    for isolation in ("spawn", "fork"):
        d = tmp_path / isolation
        d.mkdir()
        state = {"OOTCI_FIXTURE_STATE": str(d), "OOTCI_FIXTURE_LOG": str(d / "ran.log")}
        ran = run(ws, "--isolation", isolation, env=state)
        assert ran.returncode == 0, ran.output[-3000:]
        records[isolation] = {k: v[:5] for k, v in ran.results().items()}
        if isolation == "fork":
            assert (d / "killed-a-server").exists()  # the server did die
            # The first server, and the one started after it died for the test run alone.
            assert executions(state)["import"] == 2
            assert "not when run alone" in ran.results()[
                f"{RUNNER_CLASS}::test_kills_fork_server_privateuseone"][5]
    assert records["fork"] == records["spawn"]
    assert set(v[0] for v in records["fork"].values()) == {"passed"}


def test_a_child_that_dies_before_reporting_its_tests_sends_the_file_to_spawn(ws, state):
    ws.config(fixture_config("TestRunnerFixture::test_pass_a", "TestRunnerFixture::test_flaky"))
    ran = run(ws, "--isolation", "fork", env={**state, "OOTCI_FIXTURE_FORK_BREAKS": "1"})
    assert ran.returncode == 0, ran.output[-3000:]
    results = ran.results()
    assert results[f"{RUNNER_CLASS}::test_pass_a_privateuseone"][0] == "passed"
    assert results[f"{RUNNER_CLASS}::test_flaky_privateuseone"][:4] == ("passed", "", 1, 1)
    work = ws.path / ".ootci" / "runs" / ran.run_id / "work"
    first = (work / "0" / "pytest.log").read_text()
    assert first.startswith("ootci: not forked (a forked child ended (exit code 7) before "
                            "reporting its tests"), first[:300]
    # The server, then one spawned process per attempt: the pass and the flaky test's rerun.
    assert executions(state)["import"] == 3


def test_a_backend_that_starts_a_process_while_collecting_is_spawned_and_says_why(ws, state):
    # Its children would share the process (a device daemon and its pipes): the file spawns.
    ws.config(fixture_config("TestRunnerFixture::test_pass_a", "TestRunnerFixture::test_flaky"))
    ran = run(ws, "--isolation", "fork", env={**state, "OOTCI_FIXTURE_DAEMON_AT_IMPORT": "1"})
    assert ran.returncode == 0, ran.output[-3000:]
    results = ran.results()
    assert results[f"{RUNNER_CLASS}::test_pass_a_privateuseone"][0] == "passed"
    assert results[f"{RUNNER_CLASS}::test_flaky_privateuseone"][:4] == ("passed", "", 1, 1)
    work = ws.path / ".ootci" / "runs" / ran.run_id / "work"
    first = (work / "0" / "pytest.log").read_text().splitlines()[0]
    assert first.startswith("ootci: not forked (the backend started 1 process(es) while the file "
                            "was collected, which forked children would share: "), first
    assert "-c import sys; sys.stdin.read())" in first, first
    # The server, then one spawned process per attempt: the pass and the flaky test's rerun.
    assert executions(state)["import"] == 3


def test_a_backend_that_is_not_fork_safe_runs_under_spawn(ws, state):
    ws.ootci_yaml()
    text = (ws.path / "ootci.yaml").read_text()
    (ws.path / "ootci.yaml").write_text(
        text.replace("  device_type: privateuseone\n", "  device_type: privateuseone\n  fork_safe: false\n"))
    ws.config(fixture_config("TestRunnerFixture::test_pass_a", "TestRunnerFixture::test_flaky"))
    ran = run(ws, "--isolation", "fork", env=state)
    assert ran.returncode == 0, ran.output[-3000:]
    assert json.loads(ran.run_row()[2])["isolation"] == "spawn"
    assert executions(state)["import"] == 2  # the pass, and the flaky test's rerun


POOL_TEST = """
import json, os, time
import torch
from torch.testing._internal.common_device_type import deviceCountAtLeast, instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase


def _log(name, start, **fields):
    with open(os.environ["OOTCI_POOL_LOG"], "a") as f:
        f.write(json.dumps({"test": name, "file": os.path.basename(__file__), "start": start,
                            "end": time.time(), "pid": os.getpid(),
                            "devices": os.environ.get("OOTCI_REF_VISIBLE_DEVICES"), **fields}) + "\\n")


class TestPool(TestCase):
    def test_one(self, device):
        start = time.time()
        time.sleep(1.0)  # long enough for the other worker to be running too
        _log("one", start, index=torch.ones(2, device=device).device.index)

    @deviceCountAtLeast(2)
    def test_all(self, devices):
        start = time.time()
        time.sleep(0.5)
        _log("all", start, n=len(devices), count=torch.ones(2, device=devices[0]).numel())


instantiate_device_type_tests(TestPool, globals())
"""


def test_a_device_pool_gives_each_worker_its_device_and_multi_device_tests_all_alone(ws, tmp_path):
    ws.ootci_yaml(run={"workers": 2, "devices": 2})
    text = (ws.path / "ootci.yaml").read_text()
    (ws.path / "ootci.yaml").write_text(text.replace(
        "  device_type: privateuseone\n",
        "  device_type: privateuseone\n  device_env: OOTCI_REF_VISIBLE_DEVICES\n"))
    config = "test_suite_config:\n  files:\n"
    for name in ("pool_a.py", "pool_b.py"):
        (ws.path / name).write_text(POOL_TEST)
        config += (f"    - path: {ws.path / name}\n      unlisted_test_mode: skip\n      tests:\n"
                   "        - names: [TestPool::test_one, TestPool::test_all]\n")
    ws.config(config)
    log = tmp_path / "pool.jsonl"
    ran = run(ws, env={"OOTCI_POOL_LOG": str(log)})
    assert ran.returncode == 0, ran.output[-3000:]
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")
    rows = db.execute("SELECT test_id, outcome FROM results WHERE run_id = ?", (ran.run_id,))
    assert sorted((os.path.basename(t.split("::")[0]), t.split("::")[-1], o) for t, o in rows) == [
        (f, f"test_{n}_privateuseone", "passed") for f in ("pool_a.py", "pool_b.py")
        for n in ("all", "one")]
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    one = {e["file"]: e for e in entries if e["test"] == "one"}
    every = [e for e in entries if e["test"] == "all"]
    # Each worker has its own device, and its process sees it as index 0.
    assert sorted(e["devices"] for e in one.values()) == ["0", "1"], entries
    assert [e["index"] for e in one.values()] == [0, 0]
    # A test that needs two devices gets both and runs with nothing beside it.
    assert len(every) == 2 and all(e["devices"] == "0,1" and e["n"] == 2 for e in every), entries
    for e in every:
        for other in entries:
            if other is not e:
                assert other["end"] <= e["start"] or other["start"] >= e["end"], (e, other)


def test_shards_are_disjoint_cover_the_plan_and_balance_on_history(ws, state):
    ws.config("test_suite_config:\n  files:\n"
              "    - path: ${TORCH_ROOT}/test/test_view_ops.py\n"
              "      unlisted_test_mode: skip\n"
              "      tests:\n        - names: [TestViewOps::test_view_view, TestOldViewOps::test_atleast]\n"
              "    - path: ${TORCH_ROOT}/test/test_indexing.py\n"
              "      unlisted_test_mode: skip\n"
              "      tests:\n        - names: [TestIndexing::test_single_int, TestIndexing::test_none]\n"
              "    - path: ${TORCH_ROOT}/test/test_shape_ops.py\n"
              "      unlisted_test_mode: skip\n"
              "      tests:\n        - names: [TestShapeOps::test_flip]\n",
              name="configs/upstream.yaml")
    ws.config(fixture_config("TestSlowFixture::test_slow_0.*"), name="configs/fixture.yaml")
    # test_flip fails on the reference backend: no reruns, which would cost two processes per run.
    ws.ootci_yaml(run={"reruns": 0})
    whole = run(ws, env=state)
    assert whole.run_row()[0] == "finished", whole.output[-3000:]
    all_tests = set(whole.results())

    matrix = json.loads(subprocess.run(
        [str(OOTCI), "shards", "--config", "ootci.yaml", "--count", "2", "--matrix"],
        capture_output=True, text=True, cwd=ws.path, check=True).stdout)
    shards = matrix["include"]
    assert [s["shard"] for s in shards] == [1, 2]
    files = [set(s["files"]) for s in shards]
    assert files[0].isdisjoint(files[1]) and len(files[0] | files[1]) == 4
    loads = [s["expected_s"] for s in shards]
    # Greedy longest-first: the loads differ by at most one unit's duration.
    unit = max(loads)  # at least the largest unit; tightened below with the evidence
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")
    per_file = dict(db.execute("SELECT file, sum(duration_s) FROM results WHERE run_id = ? "
                               "GROUP BY file", (whole.run_id,)).fetchall())
    unit = max(per_file.values())
    assert abs(loads[0] - loads[1]) <= unit + 1e-6

    seen = []
    for k in (1, 2):
        part = run(ws, "--shard", f"{k}/2", env=state)
        assert part.run_row()[3] == f"{k}/2"
        seen.append(set(part.results()))
    assert seen[0].isdisjoint(seen[1])
    assert seen[0] | seen[1] == all_tests


def test_a_staged_selection_runs_its_second_stage_only_when_the_first_raises(ws, state):
    """`select changed --staged`: the "then" tests run, in the same run, only when a first-stage
    test fails with something other than a mismatch."""
    ws.config("test_suite_config:\n  files:\n"
              f"    - path: {FIXTURE}\n"
              "      unlisted_test_mode: mandatory_success\n")
    (ws.path / "selection.json").write_text(json.dumps({
        "files": [], "tests": [f"{FIXTURE_REL}::{RUNNER_CLASS}::test_fails_privateuseone",
                               f"{FIXTURE_REL}::{RUNNER_CLASS}::test_pass_a_privateuseone"],
        "then": {"tests": [f"{FIXTURE_REL}::{RUNNER_CLASS}::test_pass_b_privateuseone"],
                 "when": "..."}}))
    # A mismatch (test_fails' AssertionError) alone: no second stage.
    ran = run(ws, "--select", "selection.json", env=state)
    assert set(ran.outcomes()) == {f"{RUNNER_CLASS}::test_fails_privateuseone",
                                   f"{RUNNER_CLASS}::test_pass_a_privateuseone"}, ran.output[-3000:]
    stage = json.loads(ran.run_row()[2])["second_stage"]
    assert stage["ran"] is False and stage["tests"] == [
        f"{FIXTURE_REL}::{RUNNER_CLASS}::test_pass_b_privateuseone"]
    assert "second stage" not in ran.output

    # sum switched off: test_pass_a raises NotImplementedError, so the second stage runs, and
    # test_pass_b (which sums too) fails there.
    ws.ootci_yaml(env={"OOTCI_REF_DISABLED_OPS": "sum"})
    ran = run(ws, "--select", "selection.json", env=state)
    outcomes = ran.results()
    assert set(outcomes) == {f"{RUNNER_CLASS}::test_fails_privateuseone",
                             f"{RUNNER_CLASS}::test_pass_a_privateuseone",
                             f"{RUNNER_CLASS}::test_pass_b_privateuseone"}, ran.output[-3000:]
    assert outcomes[f"{RUNNER_CLASS}::test_pass_b_privateuseone"][:2] == ("failed", "NotImplementedError")
    stage = json.loads(ran.run_row()[2])["second_stage"]
    assert stage["ran"] is True
    assert stage["why"] == f"{FIXTURE_REL}::{RUNNER_CLASS}::test_pass_a_privateuseone failed with NotImplementedError"
    assert "ootci run: second stage, 1 tests in 1 files: " in ran.output
    # Both stages are in the run's manifest files, so --resume would cover them.
    files = json.loads(ran.run_row()[2])["files"]
    assert sorted(files[0]["tests"]) == sorted([
        f"{FIXTURE_REL}::{RUNNER_CLASS}::test_fails_privateuseone",
        f"{FIXTURE_REL}::{RUNNER_CLASS}::test_pass_a_privateuseone",
        f"{FIXTURE_REL}::{RUNNER_CLASS}::test_pass_b_privateuseone"])

    # A shard alone cannot decide the second stage for the other shards: it runs one wave.
    proc = subprocess.run([str(OOTCI), "run", "--config", "ootci.yaml", "--select", "selection.json",
                           "--shard", "1/2"], capture_output=True, text=True, cwd=ws.path, timeout=60)
    assert proc.returncode == 1 and "is sharded wave by wave: give --wave 1" in proc.stderr, proc.stderr


def ootci(ws, *args, env=None, timeout=120):
    return subprocess.run([str(OOTCI), *args], capture_output=True, text=True, cwd=ws.path,
                          timeout=timeout, env={**os.environ, **(env or {})})


def junit_of(ran):
    return next(line.split(" ", 1)[1] for line in ran.output.splitlines() if line.startswith("junit: "))


def test_a_staged_selection_runs_in_waves_each_sharded_and_merges_into_one_run(ws, state, tmp_path):
    """Issue 41: `ootci shards --select` splits each wave on its own, each leg runs one shard of one
    wave, `ootci select wave2` decides wave 2 from every wave-1 leg's JUnit as `ootci run` would,
    and `ootci ingest --second-stage` merges both waves into one run whose page lists wave 2 apart."""
    ws.config("test_suite_config:\n  files:\n"
              f"    - path: {FIXTURE}\n"
              "      unlisted_test_mode: mandatory_success\n")
    ws.ootci_yaml(run={"reruns": 0})
    ids = {n: f"{FIXTURE_REL}::{RUNNER_CLASS}::test_{n}_privateuseone"
           for n in ("fails", "pass_a", "sin", "pass_b", "pass_c")}
    (ws.path / "selection.json").write_text(json.dumps({
        "files": [], "tests": [ids["fails"], ids["pass_a"], ids["sin"]],
        "then": {"tests": [ids["pass_b"], ids["pass_c"]], "when": "..."}}))

    # Five runners asked for: wave 1 has three tests and wave 2 two, so three and two shards.
    shards = ootci(ws, "shards", "--config", "ootci.yaml", "--count", "5", "--select",
                   "selection.json", "--matrix")
    assert shards.returncode == 0, shards.stderr
    matrix = json.loads(shards.stdout)["include"]
    assert [(e["wave"], e["shard"], e["shards"], e["units"]) for e in matrix] == [
        (1, 1, 3, 1), (1, 2, 3, 1), (1, 3, 3, 1), (2, 1, 2, 1), (2, 2, 2, 1)], matrix
    assert all(e["files"] == [FIXTURE_REL] for e in matrix)
    text = ootci(ws, "shards", "--config", "ootci.yaml", "--count", "5", "--select", "selection.json")
    assert "wave 1: 3 shards (only 3 units)" in text.stdout and "wave 2: 2 shards" in text.stdout, text.stdout

    # sum switched off: test_pass_a raises in its wave-1 shard, so wave 2 runs (and fails).
    ws.ootci_yaml(env={"OOTCI_REF_DISABLED_OPS": "sum"}, run={"reruns": 0})
    wave1 = [run(ws, "--select", "selection.json", "--wave", "1", "--shard", f"{k}/3", env=state)
             for k in (1, 2, 3)]
    seen = [set(r.results()) for r in wave1]
    assert all(len(s) == 1 for s in seen) and len(set().union(*seen)) == 3, seen
    assert all(json.loads(r.run_row()[2])["wave"] == 1 for r in wave1)
    assert all("second_stage" not in json.loads(r.run_row()[2]) for r in wave1)
    # A shard beyond the wave's own count is an error, not an empty run.
    beyond = ootci(ws, "run", "--config", "ootci.yaml", "--select", "selection.json", "--wave", "1",
                   "--shard", "4/5", env=state)
    assert beyond.returncode == 1 and "wave 1 has 3 units (files or tests), so it splits into 3 shards" in beyond.stderr, beyond.stderr

    reports = [junit_of(r) for r in wave1]
    (tmp_path / "out").write_text("")
    decided = ootci(ws, "select", "wave2", "--config", "ootci.yaml", "--select", "selection.json",
                    "-o", "stage.json", *reports, env={"GITHUB_OUTPUT": str(tmp_path / "out")})
    assert decided.returncode == 0, decided.stderr
    why = f"{ids['pass_a']} failed with NotImplementedError"
    assert f"wave 2 (2 tests): runs: {why}" in decided.stdout, decided.stdout
    assert (tmp_path / "out").read_text() == f"run=true\ntests=2\nwhy={why}\n"
    stage = json.loads((ws.path / "stage.json").read_text())
    assert stage == {"tests": [ids["pass_b"], ids["pass_c"]], "ran": True, "why": why}

    wave2 = [run(ws, "--select", "selection.json", "--wave", "2", "--shard", f"{k}/2", env=state)
             for k in (1, 2)]
    assert set().union(*(set(r.results()) for r in wave2)) == {
        f"{RUNNER_CLASS}::test_pass_b_privateuseone", f"{RUNNER_CLASS}::test_pass_c_privateuseone"}

    merged = ootci(ws, "ingest", "--config", "ootci.yaml", "--run", "merged", "--second-stage",
                   "stage.json", *reports, *(junit_of(r) for r in wave2))
    assert merged.returncode == 0, merged.stderr
    assert "5 results from 5 files" in merged.stdout and "verdict: failure" in merged.stdout, merged.stdout
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")
    assert json.loads(db.execute("SELECT manifest FROM runs WHERE id = 'merged'").fetchone()[0])[
        "second_stage"] == stage
    page = ootci(ws, "report", "html", "--run", "merged", "--config", "ootci.yaml", "--out", "page")
    assert page.returncode == 0, page.stderr
    html = (ws.path / "page" / "report.html").read_text()
    assert 'id="wave2-why" data-ran="true">Wave 2 (2 tests) ran because wave 1 raised: ' in html
    # test_pass_b sums: wave 2 found it failing, and the failing list says so.
    assert f'data-wave="2"><td>{ids["pass_b"]}</td><td class="n">2</td>' in html
    assert f'data-wave="1"><td>{ids["pass_a"]}</td><td class="n">1</td>' in html

    # Without the fault only test_fails' mismatch: wave 2 does not run.
    ws.ootci_yaml(run={"reruns": 0})
    green = [run(ws, "--select", "selection.json", "--wave", "1", "--shard", f"{k}/3", env=state)
             for k in (1, 2, 3)]
    quiet = ootci(ws, "select", "wave2", "--config", "ootci.yaml", "--select", "selection.json",
                  *(junit_of(r) for r in green), env={"GITHUB_OUTPUT": ""})
    assert quiet.returncode == 0, quiet.stderr
    assert ("wave 2 (2 tests): does not run: no first-stage test failed other than by a mismatch"
            in quiet.stdout), quiet.stdout


def test_bad_wave_input_is_handled_and_said(ws, state):
    """A staged selection whose wave 2 is empty, and a wave asked of a selection that has none."""
    ws.config("test_suite_config:\n  files:\n"
              f"    - path: {FIXTURE}\n"
              "      unlisted_test_mode: mandatory_success\n")
    a = f"{FIXTURE_REL}::{RUNNER_CLASS}::test_pass_a_privateuseone"
    # "then" holds only what wave 1 runs already: wave 2 is empty.
    (ws.path / "selection.json").write_text(json.dumps({"tests": [a], "then": {"tests": [a]}}))
    shards = ootci(ws, "shards", "--config", "ootci.yaml", "--count", "3", "--select",
                   "selection.json", "--matrix")
    assert shards.returncode == 0, shards.stderr
    assert [(e["wave"], e["shards"]) for e in json.loads(shards.stdout)["include"]] == [(1, 1)]
    text = ootci(ws, "shards", "--config", "ootci.yaml", "--count", "3", "--select", "selection.json")
    assert "wave 2: no tests (its second stage runs nothing new)" in text.stdout, text.stdout
    empty = ootci(ws, "run", "--config", "ootci.yaml", "--select", "selection.json", "--wave", "2",
                  env=state)
    assert empty.returncode == 1, empty.stdout
    assert "--wave 2: the selection's wave 2 has no test of the plan to run" in empty.stderr, empty.stderr
    # --wave needs a selection.
    bare = ootci(ws, "run", "--config", "ootci.yaml", "--wave", "1", env=state)
    assert bare.returncode != 0 and "--select" in bare.stderr, bare.stderr
