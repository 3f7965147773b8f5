"""Acceptance tests of execution evidence (issue 8): the op recorder, `ootci discover` on real
upstream files with the reference backend, and `ootci select delta` on two upstream trees."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import textwrap
import time
import zlib

import pytest

from conftest import BACKEND_DIR, OOTCI, SOURCE_DIR, torch_root
from test_select import entries

VIEW_OPS = "test/test_view_ops.py"
FIXTURE = SOURCE_DIR / "tests" / "backend" / "fixtures" / "test_runner_fixture.py"
SWITCHED_OFF = "add"  # the reference backend's fallback raises NotImplementedError for it


class Discovery:
    def __init__(self, ws, proc):
        self.ws = ws
        self.returncode = proc.returncode
        self.output = proc.stdout + proc.stderr
        self.stdout = proc.stdout
        last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
        m = re.fullmatch(r"discover: run (\S+)", last)
        self.run_id = m.group(1) if m else None

    def results(self):
        """{"Class::name": (outcome, error_class, message, mode, base, ops, op_dtypes)}."""
        db = sqlite3.connect(self.ws.path / ".ootci" / "evidence.db")
        ops = {t: (o, d) for t, o, d in db.execute(
            "SELECT test_id, ops, op_dtypes FROM test_ops WHERE run_id = ?", (self.run_id,))}
        rows = db.execute("SELECT test_id, outcome, error_class, message, mode, base FROM results "
                          "WHERE run_id = ?", (self.run_id,)).fetchall()
        return {"::".join(r[0].split("::")[1:]) or r[0]:
                r[1:] + tuple(set(text.split()) for text in ops.get(r[0], ("", "")))
                for r in rows}


def discover(ws, *args, timeout=900):
    proc = subprocess.run([str(OOTCI), "discover", "--config", "ootci.yaml", *args],
                          capture_output=True, text=True, cwd=ws.path, timeout=timeout)
    return Discovery(ws, proc)


def kill_discovery_in_slow_test(ws, args, evidence, pass_, meanwhile=None, sig=signal.SIGKILL):
    """Starts a discovery, kills it (`sig`) inside test_slow in `pass_`; the plain run's id.
    `meanwhile(pid)` runs while it is in test_slow, before the kill. A SIGINT is a stop: the
    discovery must end by itself, with status 130."""
    mark = ws.path / ".ootci" / f"slow-started-{pass_}"
    mark.unlink(missing_ok=True)
    proc = subprocess.Popen([str(OOTCI), "discover", "--config", "ootci.yaml", *args, "--evidence",
                             evidence], cwd=ws.path,
                            env={**os.environ, "OOTCI_FIXTURE_MARK": str(mark),
                                 "OOTCI_FIXTURE_MARK_PASS": pass_},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1200):
            if mark.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert mark.exists(), f"the slow test never started in the {pass_} pass"
        if meanwhile:
            meanwhile(proc.pid)
    finally:
        proc.send_signal(sig)
        status = proc.wait(timeout=120)
    if sig == signal.SIGINT:
        assert status == 130, status
    db = sqlite3.connect(ws.path / evidence)
    return next(r[0] for r in db.execute("SELECT id, manifest FROM runs ORDER BY started_ms")
                if json.loads(r[1]).get("discovery_pass") == "plain")


def runs_in(ws):
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")
    return [r[0] for r in db.execute("SELECT id FROM runs ORDER BY started_ms")]


def discoveries(ws):
    """The newest discovery of each file: {relpath: (file_hash, backend_rev, run_id)}."""
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")
    return {r[0]: r[1:] for r in db.execute(
        "SELECT relpath, file_hash, backend_rev, run_id FROM discovered_files "
        "ORDER BY discovered_ms, run_id")}


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def backend_repo(tmp_path):
    """The backend's device_root as a git checkout, so its revision is a commit."""
    repo = tmp_path / "backend-src"
    repo.mkdir()
    (repo / "kernels.cpp").write_text("// add: not implemented yet\n")
    git(repo, "init", "-q")
    git(repo, "add", "kernels.cpp")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "kernels")
    return repo


def with_device_root(ws, repo):
    text = (ws.path / "ootci.yaml").read_text()
    (ws.path / "ootci.yaml").write_text(text.replace("upstream:\n", f"upstream:\n  device_root: {repo}\n"))


def test_discover_keeps_raw_outcomes_bases_and_device_ops_and_reruns_only_what_changed(
        ws, backend_repo):
    # A short limit: on torch 2.6, two complex variants hang on the reference backend.
    ws.ootci_yaml(env={"OOTCI_REF_DISABLED_OPS": SWITCHED_OFF},
                  run={"reruns": 0, "discover_test_timeout_s": 20})
    with_device_root(ws, backend_repo)
    # The backend's own plan runs one fixture test and skips the rest; discovery runs them all.
    ws.config("test_suite_config:\n  files:\n"
              f"    - path: {FIXTURE}\n"
              "      unlisted_test_mode: skip\n"
              "      tests:\n"
              "        - names: [TestRunnerFixture::test_pass_a]\n")

    first = discover(ws, "--files", "test/test_view_o*s.py")
    assert first.returncode == 0, first.output[-3000:]
    assert first.run_id, first.output[-3000:]
    results = first.results()
    assert len(results) > 200  # every variant of the file, whatever the backend's configs say
    assert {r[3] for r in results.values()} == {"mandatory_success"}
    summary = re.search(r"^test/test_view_ops\.py: (\d+) variants \((\d+) passed, (\d+) failed, "
                        r"(\d+) error, (\d+) skipped, (\d+) xfailed\); (\d+) distinct device ops$",
                        first.stdout, re.M)
    assert summary, first.stdout
    assert int(summary.group(1)) == len(results)
    assert int(summary.group(2)) == sum(r[0] == "passed" for r in results.values())
    assert int(summary.group(3)) == sum(r[0] == "failed" for r in results.values())
    assert int(summary.group(7)) == len(set().union(*(r[5] for r in results.values())))

    # Every variant names the config entry it comes from: generic class and template method.
    for test, r in results.items():
        cls, name = test.split("::")
        base_cls, method = r[4].split("::")
        assert cls == base_cls + "PRIVATEUSEONE" and name.startswith(method + "_"), (test, r[4])
    assert results["TestOldViewOpsPRIVATEUSEONE::test_view_empty_privateuseone"][4] == \
        "TestOldViewOps::test_view_empty"
    assert results["TestOldViewOpsPRIVATEUSEONE::test_broadcast_to_privateuseone_float32"][4] == \
        "TestOldViewOps::test_broadcast_to"

    # A passing variant records the device ops it called.
    view_empty = results["TestOldViewOpsPRIVATEUSEONE::test_view_empty_privateuseone"]
    assert view_empty[0] == "passed"
    assert {"aten::view", "aten::randn"} <= view_empty[5]
    # And the dtypes it called them with.
    assert "aten::view:float32" in view_empty[6], view_empty[6]
    # What a variant reached only while making its inputs (make_tensor) is marked.
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")
    marked = db.execute("SELECT op_dtypes, input_op_dtypes FROM test_ops WHERE run_id = ? AND "
                        "input_op_dtypes != ''", (first.run_id,)).fetchall()
    assert len(marked) > 20, len(marked)
    assert all(set(inputs.split()) <= set(pairs.split()) for pairs, inputs in marked)

    # Variants that reach the switched-off op fail naming it, and have it among their ops. Where
    # they reach it differs by torch (1.13's make_tensor adds on the device; 2.x's builds on the
    # CPU, and the comparison adds): the reporter reports the error under upstream's "Comparing"
    # wrapper, so both give the backend's own error.
    switched_off = {t: r for t, r in results.items()
                    if "switched off by OOTCI_REF_DISABLED_OPS" in r[2]}
    assert len(switched_off) >= 10, len(switched_off)
    for test, r in switched_off.items():
        assert (r[0], r[1]) == ("failed", "NotImplementedError"), (test, r[:2])
        assert f"'aten::{SWITCHED_OFF}'" in r[2], (test, r[2])
        assert any(op.split(".")[0] == f"aten::{SWITCHED_OFF}" for op in r[5]), (test, r[5])
    # A float32 variant that failed there called add with float32; an int64 sibling of one never
    # adds on the device, and passes.
    siblings = [(t, t[:-len("float32")] + "int64") for t in switched_off
                if t.endswith("_privateuseone_float32")]  # one dtype, not complex128_float32
    siblings = [(f, i) for f, i in siblings if i in results]
    assert siblings, sorted(switched_off)
    for float32, _ in siblings:
        assert any(p.startswith(f"aten::{SWITCHED_OFF}") and p.endswith(":float32")
                   for p in results[float32][6]), (float32, results[float32][6])
        assert {p.rsplit(":", 1)[0] for p in results[float32][6]} <= results[float32][5]
    assert any(results[i][0] == "passed" and
               not any(op.split(".")[0] == f"aten::{SWITCHED_OFF}" for op in results[i][5])
               for _, i in siblings), [(i, results[i][:3]) for _, i in siblings]

    rev = discoveries(ws)[VIEW_OPS][1]
    assert re.fullmatch(r"[0-9a-f]{40}", rev), rev  # the clean commit of device_root
    assert discoveries(ws)[VIEW_OPS][2] == first.run_id

    # Nothing changed: the file is up to date and nothing runs (another spelling of the same file).
    runs = runs_in(ws)
    again = discover(ws, "--files", VIEW_OPS)
    assert again.returncode == 0, again.output[-3000:]
    assert runs_in(ws) == runs
    assert f"up to date: {VIEW_OPS} (run {first.run_id}," in again.stdout
    assert again.stdout.strip().endswith("(1 files up to date; --force runs them again)")

    # Without --files: the plan's files (the fixture), every variant mandatory.
    plan_files = discover(ws)
    assert plan_files.returncode == 0, plan_files.output[-3000:]
    fixture = plan_files.results()
    assert {t.split("::")[0] for t in fixture} == {
        "TestRunnerFixturePRIVATEUSEONE", "TestSlowFixturePRIVATEUSEONE",
        "TestTeardownFixturePRIVATEUSEONE"}
    assert fixture["TestRunnerFixturePRIVATEUSEONE::test_pass_b_privateuseone"][0] == "passed"
    assert fixture["TestRunnerFixturePRIVATEUSEONE::test_fails_privateuseone"][0] == "failed"
    assert str(FIXTURE) in discoveries(ws)
    assert discover(ws).run_id is None  # up to date

    # --force runs it again; a new backend revision (an edited kernel) too.
    forced = discover(ws, "--force")
    assert forced.run_id and forced.run_id != plan_files.run_id, forced.output[-2000:]
    (backend_repo / "kernels.cpp").write_text("// add: implemented\n")
    edited = discover(ws)
    assert edited.run_id and edited.run_id not in (plan_files.run_id, forced.run_id), \
        edited.output[-2000:]
    new_rev = discoveries(ws)[str(FIXTURE)][1]
    assert new_rev.startswith(rev + "-dirty+"), new_rev
    # The view ops discovery is still the one from the old revision: it was not asked for.
    assert discoveries(ws)[VIEW_OPS][1:] == (rev, first.run_id)


def test_discover_refuses_a_glob_matching_nothing(ws):
    ws.config("test_suite_config:\n  files:\n"
              f"    - path: {FIXTURE}\n")
    bad = discover(ws, "--files", "test/test_no_such_*.py")
    assert bad.returncode == 1
    assert "--files test/test_no_such_*.py: no file matches" in bad.output


def test_the_recording_pass_does_not_run_again_what_crashed_or_hung(ws, tmp_path):
    """A device that crashes and hangs (OpenReg's daemon does both) pays for each once: the
    recording pass runs only what ended in the plain pass, and a dying process records no ops."""
    log = tmp_path / "ran.log"
    ws.ootci_yaml(env={"OOTCI_REF_CRASH_OPS": "sin", "OOTCI_REF_HANG_OPS": "cos",
                       "OOTCI_FIXTURE_LOG": str(log), "OOTCI_FIXTURE_STATE": str(tmp_path)},
                  run={"reruns": 0, "discover_test_timeout_s": 5, "workers": 1})
    ws.config("test_suite_config:\n  files:\n"
              f"    - path: {FIXTURE}\n")
    d = discover(ws)
    assert d.returncode == 0, d.output[-3000:]
    results = d.results()
    sin = results["TestRunnerFixturePRIVATEUSEONE::test_sin_privateuseone"]
    cos = results["TestRunnerFixturePRIVATEUSEONE::test_cos_privateuseone"]
    passed = results["TestRunnerFixturePRIVATEUSEONE::test_pass_a_privateuseone"]
    failed = results["TestRunnerFixturePRIVATEUSEONE::test_fails_privateuseone"]
    assert sin[1].startswith("SIG") and cos[1] == "Timeout", (sin[:3], cos[:3])
    assert (passed[0], failed[0]) == ("passed", "failed")
    # Ran in both passes, and recorded ops: what ended, passed or failed.
    assert "aten::ones" in passed[5] and "aten::ones" in failed[5], (passed[5], failed[5])
    ran = log.read_text().split()
    # The crash ran twice in the plain pass (among others, then first in the next process, where
    # it crashed again), the hang once; neither ran in the recording pass.
    assert ran.count("test_sin_privateuseone") == 2, ran
    assert ran.count("test_cos_privateuseone") == 1, ran
    assert ran.count("test_pass_a_privateuseone") == 2, ran
    assert ran.count("test_fails_privateuseone") == 2, ran


SHARDED_TESTS = """
    import os
    import time

    import torch
    from torch.testing import make_tensor
    from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
    from torch.testing._internal.common_utils import TestCase


    class TestSharded(TestCase):
        @dtypes(torch.float32, torch.float64, torch.int32, torch.int64)
        def test_add(self, device, dtype):
            a = make_tensor((8,), dtype=dtype, device=device, low=-9, high=9)
            self.assertEqual((a + a).cpu(), a.cpu() + a.cpu())

        @dtypes(torch.float32, torch.float64, torch.int32, torch.int64)
        def test_mul(self, device, dtype):
            a = make_tensor((8,), dtype=dtype, device=device, low=-9, high=9)
            self.assertEqual((a * 2).cpu(), a.cpu() * 2)

        @dtypes(torch.float32, torch.float64)
        def test_neg(self, device, dtype):
            self.assertEqual(torch.neg(torch.ones(3, dtype=dtype, device=device)).cpu(),
                             -torch.ones(3, dtype=dtype))

        def test_in_range(self, device):
            t = make_tensor((64,), dtype=torch.float32, device=device, low=0, high=1).cpu()
            self.assertTrue(bool(((t >= 0) & (t < 1)).all()))

        def test_slow(self, device):
            # Tells the test it is running in the pass asked for (plain unless
            # OOTCI_FIXTURE_MARK_PASS=recording), then gives it time to kill the discovery.
            mark = os.environ.get("OOTCI_FIXTURE_MARK")
            recording = os.environ.get("OOTCI_RECORD_OPS") == "1"
            if mark and recording == (os.environ.get("OOTCI_FIXTURE_MARK_PASS") == "recording"):
                open(mark, "w").close()
                time.sleep(30)
            self.assertEqual(torch.ones(2, device=device).cpu(), torch.ones(2))


    instantiate_device_type_tests(TestSharded, globals())
"""


def discovered_variants(db_path):
    """Every variant of the database's discoveries: {test_id: (outcome, error_class, mode, base,
    ops, op_dtypes, input_op_dtypes, input_probe)}."""
    db = sqlite3.connect(db_path)
    runs = [r for (r,) in db.execute("SELECT DISTINCT run_id FROM discovered_files")]
    out = {}
    for run in runs:
        ops = {t: rest for t, *rest in db.execute(
            "SELECT test_id, ops, op_dtypes, input_op_dtypes, input_probe FROM test_ops "
            "WHERE run_id = ?", (run,))}
        for t, *rest in db.execute("SELECT test_id, outcome, error_class, mode, base FROM results "
                                   "WHERE run_id = ?", (run,)):
            assert t not in out, t  # one record per variant
            out[t] = tuple(rest) + tuple(ops.get(t, ("", "", "", "")))
    return out


def proposal(ws, db, out):
    ws.ootci("select", "propose", "--config", "ootci.yaml", "--evidence", db, "--out", out,
             "--variants", out + ".json")
    return {p.name: p.read_bytes() for p in sorted((ws.path / out).glob("*.yaml"))}


def test_a_discovery_sharded_three_ways_and_merged_is_the_unsharded_discovery(ws):
    # neg, which no input generation calls: only test_neg's variants fail.
    ws.ootci_yaml(env={"OOTCI_REF_DISABLED_OPS": "neg"}, run={"reruns": 0})
    tests = str(ws.write("test_sharded.py", SHARDED_TESTS))
    args = ("--files", tests, "--probe-inputs", "2")
    # The databases live in the workspace, which the backend's revision (a tree digest of the
    # folder, as it is no git checkout) leaves out: every discovery is of one revision.
    whole = discover(ws, *args, "--evidence", ".ootci/whole.db")
    assert whole.returncode == 0 and whole.run_id, whole.output[-3000:]
    expected = discovered_variants(ws.path / ".ootci/whole.db")
    assert len(expected) == 12, expected
    assert {v[0] for v in expected.values()} >= {"passed", "failed"}, expected
    assert any(v[7].startswith("failed with its inputs shifted") for v in expected.values()), expected
    # The two workers (run.workers) shared the one file: each process collected its own part.
    parts = []
    for events in (ws.path / ".ootci" / "runs" / whole.run_id / "work").glob("*/events.jsonl"):
        for line in events.read_text().splitlines():
            event = json.loads(line)
            if event["e"] == "collected" and event["tests"]:
                parts.append(set(event["tests"]))
    assert len(parts) >= 2 and set().union(*parts) == set(expected), parts
    assert not set.intersection(*parts[:2]), parts

    # Part K of a file holds the variants whose id's CRC-32 is K-1 modulo 3 (no --timings).
    part = {t: zlib.crc32(t.encode()) % 3 + 1 for t in expected}
    slow = next(t for t in expected if t.endswith("test_slow_privateuseone"))
    for k in (1, 2, 3):
        if k == part[slow]:
            continue
        shard = discover(ws, *args, "--shard", f"{k}/3", "--evidence", f".ootci/shard{k}.db")
        assert shard.returncode == 0, shard.output[-3000:]
        assert f"(shard {k}/3)" in shard.stdout
        assert set(discovered_variants(ws.path / f".ootci/shard{k}.db")) == \
            {t for t in expected if part[t] == k}

    # The shard holding the slow test is killed inside it, then run again alone: it continues the
    # killed run, whose finished variants stay as they were.
    k = part[slow]
    shard_args = (*args, "--shard", f"{k}/3")
    # While it runs, the same discovery started again is refused: two processes would run its
    # tests twice and both write its results.
    def second_discovery_is_refused(pid):
        second = discover(ws, *shard_args, "--evidence", f".ootci/shard{k}.db")
        assert second.returncode != 0, second.output[-3000:]
        assert re.search(r"run \S+ is still being run by another ootci process \(pid %d\)" % pid,
                         second.output), second.output[-3000:]

    killed = kill_discovery_in_slow_test(ws, shard_args, f".ootci/shard{k}.db", "plain",
                                         meanwhile=second_discovery_is_refused)
    assert discovered_variants(ws.path / f".ootci/shard{k}.db") == {}  # a killed shard marks nothing
    again = discover(ws, *shard_args, "--evidence", f".ootci/shard{k}.db")
    assert again.returncode == 0, again.output[-3000:]
    assert f"plain pass: continuing run {killed} (running when it stopped" in again.stdout, again.stdout
    assert f"ootci discover: continuing the plain pass of run {killed} (running;" in again.output
    assert again.run_id == killed
    up_to_date = discover(ws, *shard_args, "--evidence", f".ootci/shard{k}.db")
    assert "discover: nothing to run" in up_to_date.stdout, up_to_date.stdout

    # Killed in the recording pass: the plain pass is taken as it finished, the recording pass
    # continues, and the evidence is the same as the uninterrupted shard's.
    plain = kill_discovery_in_slow_test(ws, shard_args, ".ootci/recording-killed.db", "recording")
    again = discover(ws, *shard_args, "--evidence", ".ootci/recording-killed.db")
    assert again.returncode == 0, again.output[-3000:]
    assert f"plain pass: run {plain} finished it before" in again.stdout, again.stdout
    assert "recording pass: continuing run " in again.stdout, again.stdout
    assert again.run_id == plain
    assert discovered_variants(ws.path / ".ootci/recording-killed.db") == \
        discovered_variants(ws.path / f".ootci/shard{k}.db")
    runs = sqlite3.connect(ws.path / ".ootci/recording-killed.db").execute("SELECT id FROM runs")
    assert [r[0] for r in runs] == [plain]  # the recording run is gone once its ops are copied

    # Stopped (SIGINT) in the recording pass: status 130, nothing discovered, and the recording
    # run kept, so the next discover continues it rather than starting it again.
    plain = kill_discovery_in_slow_test(ws, shard_args, ".ootci/recording-stopped.db", "recording",
                                        sig=signal.SIGINT)
    assert discovered_variants(ws.path / ".ootci/recording-stopped.db") == {}
    again = discover(ws, *shard_args, "--evidence", ".ootci/recording-stopped.db")
    assert again.returncode == 0, again.output[-3000:]
    assert "recording pass: continuing run " in again.stdout and \
        "(interrupted when it stopped;" in again.stdout, again.stdout
    assert again.run_id == plain
    assert discovered_variants(ws.path / ".ootci/recording-stopped.db") == \
        discovered_variants(ws.path / f".ootci/shard{k}.db")

    # Another plan is not continued: the backend's environment changed since the kill.
    killed = kill_discovery_in_slow_test(ws, shard_args, ".ootci/env-changed.db", "plain")
    ws.ootci_yaml(env={"OOTCI_REF_DISABLED_OPS": "neg", "OOTCI_UNUSED": "1"}, run={"reruns": 0})
    fresh = discover(ws, *shard_args, "--evidence", ".ootci/env-changed.db")
    ws.ootci_yaml(env={"OOTCI_REF_DISABLED_OPS": "neg"}, run={"reruns": 0})
    assert fresh.returncode == 0 and "continuing" not in fresh.stdout, fresh.output[-3000:]
    assert fresh.run_id != killed

    merged = ws.ootci("evidence", "merge", *(f".ootci/shard{k}.db" for k in (1, 2, 3, 1)),
                      "--out", ".ootci/merged.db").stdout
    assert ".ootci/merged.db: run merge-" in merged and "12 variants; complete (3 of 3)" in merged, merged
    assert "already merged: .ootci/shard1.db" in merged, merged
    assert discovered_variants(ws.path / ".ootci/merged.db") == expected

    # What selection makes of it is what it makes of the unsharded discovery, byte for byte.
    from_whole = proposal(ws, ".ootci/whole.db", "proposed-whole")
    assert from_whole and any(b"xfail" in text for text in from_whole.values()), from_whole
    assert proposal(ws, ".ootci/merged.db", "proposed-merged") == from_whole
    assert json.loads((ws.path / "proposed-merged.json").read_text()) == \
        json.loads((ws.path / "proposed-whole.json").read_text())

    # Placed by the unsharded discovery's durations (--timings): each shard holds the variants
    # part_placed.txt places in it, its two workers (run.workers) share them as
    # subpart_placed.txt places them, and the two shards merged are the unsharded discovery.
    def placement(path):
        return {tid: int(part) for tid, part in
                (line.rsplit("\t", 1) for line in path.read_text().splitlines())}

    for k in (1, 2):
        timed = discover(ws, *args, "--shard", f"{k}/2", "--timings", ".ootci/whole.db",
                         "--evidence", f".ootci/timed{k}.db")
        assert timed.returncode == 0, timed.output[-3000:]
        run_dir = ws.path / ".ootci" / "runs" / timed.run_id
        in_part = {t for t, part in placement(run_dir / "part_placed.txt").items() if part == k}
        assert set(discovered_variants(ws.path / f".ootci/timed{k}.db")) == in_part, in_part
        among = placement(run_dir / "subpart_placed.txt")
        # Both workers get a share unless the part holds one variant: placed by duration, a part
        # can be a single variant that took longer than all the others (on torch 2.6 the first
        # variant a process runs pays for its warm-up, seen in CI).
        assert set(among) == in_part, among
        assert set(among.values()) == ({1, 2} if len(in_part) > 1 else {1}), among
        collected = set()
        for events in (run_dir / "work").glob("*/events.jsonl"):
            for line in events.read_text().splitlines():
                event = json.loads(line)
                if event["e"] == "collected" and event["tests"]:
                    collected.add(frozenset(event["tests"]))
        assert collected == {frozenset(t for t, j in among.items() if j == worker)
                             for worker in set(among.values())}, (collected, among)
    ws.ootci("evidence", "merge", ".ootci/timed1.db", ".ootci/timed2.db", "--out", ".ootci/timed.db")
    assert discovered_variants(ws.path / ".ootci/timed.db") == expected

    # Bad input: a part beyond the count, part 0, an unsharded discovery among shards.
    for bad in ("0/3", "4/3"):
        refused = discover(ws, *args, "--shard", bad, "--evidence", ".ootci/bad.db")
        assert refused.returncode != 0 and \
            f"--shard {bad}: expected K/N with 1 <= K <= N" in refused.output, refused.output
    mixed = ws.ootci("evidence", "merge", ".ootci/whole.db", ".ootci/shard1.db", "--out", ".ootci/mixed.db",
                     check=False)
    assert mixed.returncode == 1 and "never with a whole discovery" in mixed.stderr, mixed.stderr
    assert not (ws.path / ".ootci/mixed.db").exists()


INPUT_VALUES_TESTS = """
    import torch
    from torch.testing import make_tensor
    from torch.testing._internal.common_device_type import instantiate_device_type_tests
    from torch.testing._internal.common_utils import TestCase


    class TestInputValues(TestCase):
        def test_in_range(self, device):
            # Checks the values it draws, not a computation on them: any shift fails it.
            t = make_tensor((64,), dtype=torch.float32, device=device, low=0, high=1).cpu()
            self.assertTrue(bool(((t >= 0) & (t < 1)).all()))

        def test_against_cpu(self, device):
            # Compares the device with the CPU on whatever it drew.
            t = make_tensor((64,), dtype=torch.float32, device=device, low=0, high=1)
            self.assertEqual((t * 2).cpu(), t.cpu() * 2)

        def test_no_inputs(self, device):
            self.assertEqual(torch.zeros(3, device=device).cpu(), torch.zeros(3))


    instantiate_device_type_tests(TestInputValues, globals())
"""


def test_the_input_probe_finds_the_tests_that_depend_on_the_values_they_draw(ws):
    ws.ootci_yaml(run={"reruns": 0})
    tests = ws.write("test_input_values.py", INPUT_VALUES_TESTS)
    first = discover(ws, "--files", str(tests))
    assert first.returncode == 0 and first.run_id, first.output[-3000:]
    assert "input probe" not in first.stdout
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")

    def probes():
        return {t.split("::")[-1]: p for t, p in db.execute(
            "SELECT test_id, input_probe FROM test_ops WHERE run_id = ?", (first.run_id,))}

    assert set(probes().values()) == {""}  # not probed

    # Existing evidence gains the probe; the file itself is up to date and does not run again.
    probed = discover(ws, "--files", str(tests), "--probe-inputs", "2")
    assert probed.returncode == 0, probed.output[-3000:]
    assert "input probe: 2 tests that drew inputs on the device, 2 passes: 1 failed with their " \
           "inputs shifted (they depend on the values they draw), 1 held" in probed.stdout, \
        probed.stdout
    assert probes() == {
        "test_in_range_privateuseone": "failed with its inputs shifted by 1.522: AssertionError",
        "test_against_cpu_privateuseone": "held: 2 shifts of its inputs",
        "test_no_inputs_privateuseone": "",  # it drew no inputs on the device
    }
    assert runs_in(ws) == [first.run_id]  # the probe's passes leave no runs behind

    # Probed once is enough.
    again = discover(ws, "--files", str(tests), "--probe-inputs", "2")
    assert "input probe: 0 tests" in again.stdout, again.stdout
    assert runs_in(ws) == [first.run_id]

    # A proposal reads the probe: a pass only for the values a test draws is no mandatory test;
    # the test that compares the device with the CPU on any values stays one.
    ws.ootci("select", "propose", "--config", "ootci.yaml", "--out", "proposed",
             "--variants", "variants.json")
    decided = {t.split("::")[-1]: m for t, m in
               json.loads((ws.path / "variants.json").read_text())["variants"].items()}
    assert decided["test_in_range_privateuseone"] == "xfail", decided
    assert decided["test_against_cpu_privateuseone"] == "mandatory_success", decided
    reasons = [r for p in (ws.path / "proposed").glob("*.yaml") for names, _, r in entries(p.read_text())
               if "TestInputValues::test_in_range" in names]
    assert reasons == ["xfail: passed in every run, but failed with its inputs shifted by 1.522: "
                       "AssertionError: it passes only for the values it draws (discovery's input "
                       "probe)"], reasons


RECORDER_PROBE = textwrap.dedent("""
    import json, os, sys
    import torch, ootci_reference_backend
    from ootci_torch import input_generation, op_observer, op_recorder, recording_config
    device = os.environ["OOTCI_DEVICE_TYPE"]
    out = {}
    if sys.argv[1] == "unavailable":                   # no observer can be built: the mode records
        import pathlib
        op_observer._SOURCE = pathlib.Path("/nonexistent/op_observer.cpp")
    input_generation.mark_input_generators()
    from torch.testing import make_tensor
    with op_recorder.Recording() as rec:
        drawn = make_tensor((2,), device=device, dtype=torch.int64)  # input generation
        cpu = torch.arange(6.0).reshape(2, 3)
        cpu_only = torch.cumsum(cpu, 0)                # never touches the device
        on_device = torch.ones(2, 3, device=device)    # a factory: only device= names the device
        moved = cpu.to(device)                         # CPU input, device result
        both = on_device.mul(moved)
        picked = both.index_select(0, torch.tensor([1], device=device))  # float32 and int64
        same = on_device.eq(moved)                     # float32 in, bool out
        try:
            both.add(1)                                # switched off: raises, still recorded
        except NotImplementedError:
            out["raised"] = True
    out["ops"] = rec.ops
    out["op_dtypes"] = rec.op_dtypes
    out["input_op_dtypes"] = rec.input_op_dtypes
    if sys.argv[1] == "composite":
        # Device ops that only composite kernels reach: masked_fill.Scalar runs masked_fill_,
        # logsumexp runs sum, amax and exp; the results are the plain run's.
        x = torch.tensor([[0.5, -1.0, 2.0], [3.0, 0.0, -2.0]])
        mask = x > 0
        with op_recorder.Recording() as rec:
            filled = x.to(device).masked_fill(mask.to(device), 7.0).cpu()
            lse = torch.logsumexp(x.to(device), 1).cpu()
        out["composite_ops"] = rec.ops
        out["composite_values"] = [filled.tolist() == x.masked_fill(mask, 7.0).tolist(),
                                   torch.allclose(lse, torch.logsumexp(x, 1))]
        # cumprod's backward calls any() on the device, except under a dispatch mode, where ATen
        # takes its tensor-subclass branch instead.
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
        with op_recorder.Recording() as rec:
            grad, = torch.autograd.grad([torch.cumprod(x, 0).sum()], [x])
        out["backward_ops"] = rec.ops
        cpu_x = x.detach().cpu().requires_grad_()
        cpu_grad, = torch.autograd.grad([torch.cumprod(cpu_x, 0).sum()], [cpu_x])
        out["grad_matches"] = grad.cpu().tolist() == cpu_grad.tolist()
    if sys.argv[1] == "broken":
        if recording_config.recorder_kind() == "mode":
            from ootci_torch import recording_mode
            recording_mode.op_name = lambda func: 1 / 0  # the recorder fails inside the mode
        else:
            op_observer.stop = lambda: 1 / 0            # the observer reports a failure
        with op_recorder.Recording() as rec:
            value = torch.ones(2, device=device).mul(3).sum().item()
        out["broken"] = [rec.ops, value]
    print(json.dumps(out), flush=True)
    # Leaves as the runner's processes do (run_reporter.end_process): the backward above started
    # torch's autograd device threads, and one still waiting for the GIL when the interpreter
    # finalizes aborts the process (pytorch/pytorch#38230).
    os._exit(0)
""")

RECORDERS = ("observer", "mode")


def recorder_env(**extra):
    return {**os.environ, "OOTCI_DEVICE_TYPE": "privateuseone",
            "PYTHONPATH": f"{SOURCE_DIR / 'python'}:{BACKEND_DIR}", **extra}


def run_probe(source, *args, **env):
    proc = subprocess.run(["/usr/bin/python3", "-c", source, *args], capture_output=True,
                          text=True, env=recorder_env(**env), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.parametrize("recorder", RECORDERS)
def test_recorder_records_only_device_ops_and_never_fails_a_test(ws, recorder):
    out, _ = run_probe(RECORDER_PROBE, "broken", OOTCI_REF_DISABLED_OPS="add",
                       OOTCI_RECORDER=recorder)
    assert out["raised"]
    ops = set(out["ops"])
    assert {"aten::ones", "aten::_to_copy", "aten::mul.Tensor", "aten::add.Tensor"} <= ops
    # Inside composite kernels on the device: ones runs empty and fill_, add.Tensor runs add.out
    # (where the switch raises), to() copies through copy_ and the backend's _copy_from.
    assert {"aten::empty.memory_format", "aten::fill_.Scalar", "aten::add.out", "aten::copy_",
            "aten::_copy_from"} <= ops, ops
    assert not ops & {"aten::cumsum", "aten::arange.start", "aten::arange.start_out"}, ops
    assert out["ops"] == sorted(out["ops"])
    # Each op with the dtypes of its tensors on the device, arguments and results.
    pairs = set(out["op_dtypes"])
    assert {"aten::mul.Tensor:float32", "aten::index_select:float32", "aten::index_select:int64",
            "aten::eq.Tensor:float32", "aten::eq.Tensor:bool", "aten::ones:float32"} <= pairs, pairs
    assert not {"aten::mul.Tensor:int64", "aten::mul.Tensor:bool"} & pairs, pairs
    assert {p.rsplit(":", 1)[0] for p in pairs} <= ops
    # make_tensor's int64 randint ran only while generating inputs; float32 mul ran in the
    # test's own calls.
    inputs = set(out["input_op_dtypes"])
    assert any(p.startswith("aten::randint") and p.endswith(":int64") for p in inputs), inputs
    assert inputs <= pairs and "aten::mul.Tensor:float32" not in inputs, inputs
    # A recorder that fails records nothing, and the computation is unchanged.
    assert out["broken"] == [None, 6.0]

    out, _ = run_probe(RECORDER_PROBE, "composite", OOTCI_RECORDER=recorder)  # every op on
    composite = set(out["composite_ops"])
    assert {"aten::masked_fill.Scalar", "aten::masked_fill_.Scalar", "aten::logsumexp",
            "aten::sum.IntList_out", "aten::amax.out"} <= composite, composite
    assert not composite & {"aten::gt.Scalar"}, composite  # the mask was made on the CPU
    assert out["composite_values"] == [True, True]
    backward = set(out["backward_ops"])
    assert out["grad_matches"]
    assert {"aten::cumprod", "aten::mul.Tensor"} <= backward, backward  # backward is recorded
    # Only the observer sees what a plain run does here.
    assert ("aten::any" in backward) == (recorder == "observer"), backward


def test_recorder_falls_back_to_the_dispatch_mode_without_an_observer(ws):
    out, stderr = run_probe(RECORDER_PROBE, "unavailable")
    assert "ootci: op observer unavailable (FileNotFoundError" in stderr, stderr[-2000:]
    assert {"aten::ones", "aten::fill_.Scalar", "aten::add.out"} <= set(out["ops"]), out


COMPOSITE_PROBE = textwrap.dedent("""
    import json, os
    import torch, ootci_reference_backend
    from ootci_torch import op_recorder
    device = os.environ["OOTCI_DEVICE_TYPE"]
    lib = torch.library.Library("ootci_probe", "DEF")
    lib.define("bump_(Tensor(a!) self) -> Tensor(a!)")
    lib.define("second_try(Tensor self) -> Tensor")
    calls = {"bump_": 0, "second_try": 0}

    def bump_(self):                # writes its argument, then fails
        calls["bump_"] += 1
        self.add_(1)
        raise RuntimeError("bump_ failed after writing")

    def second_try(self):           # fails on its first call only
        calls["second_try"] += 1
        if calls["second_try"] == 1:
            raise RuntimeError("first call fails")
        return self.mul(2)

    lib.impl("bump_", bump_, "CompositeExplicitAutograd")
    lib.impl("second_try", second_try, "CompositeExplicitAutograd")
    # torch 1.13 has no autograd fallthrough for new ops on PrivateUse1.
    below_autograd = torch._C._AutoDispatchBelowAutograd()
    x = torch.zeros(2, device=device)
    out = {}
    with op_recorder.Recording() as rec:
        try:
            torch.ops.ootci_probe.bump_(x)
        except RuntimeError as e:
            out["bump_error"] = str(e)
        try:
            out["y"] = torch.ops.ootci_probe.second_try(torch.ones(2, device=device)).cpu().tolist()
        except RuntimeError as e:
            out["second_try_error"] = str(e)
    out.update(ops=rec.ops, calls=calls, x=x.cpu().tolist())
    print(json.dumps(out))
""")


@pytest.mark.parametrize("recorder", RECORDERS)
def test_recorder_runs_an_op_that_writes_its_arguments_once(ws, recorder):
    out, _ = run_probe(COMPOSITE_PROBE, OOTCI_RECORDER=recorder)
    # The in-place op's composite kernel failed after writing: its error propagates and it is
    # not run again, so its argument was incremented once.
    assert out["bump_error"] == "bump_ failed after writing"
    assert out["calls"]["bump_"] == 1 and out["x"] == [1.0, 1.0]
    assert {"ootci_probe::bump_", "aten::add_.Tensor", "ootci_probe::second_try"} <= set(out["ops"])
    if recorder == "mode":
        # The mode runs a functional op again plainly when its composite kernel fails under it.
        assert out["calls"]["second_try"] == 2 and out["y"] == [2.0, 2.0]
    else:
        # The observer runs nothing itself: the op fails as it would in a plain run.
        assert out["calls"]["second_try"] == 1 and out["second_try_error"] == "first call fails"


# --- `ootci select delta` -------------------------------------------------------------------

DELTA_FILES = ("test/test_view_ops.py", "test/test_bundled_images.py",
               "test/test_numba_integration.py")


def count_tests(path):
    """def test* at module level or in module-level classes: an oracle independent of ootci."""
    import ast
    tree = ast.parse(path.read_text())
    body = list(tree.body) + [m for n in tree.body if isinstance(n, ast.ClassDef) for m in n.body]
    return sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
               for n in body)


def function_lines(source, cls, name):
    """(first, last) 1-based lines of Class::name, decorators included."""
    import ast
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for member in node.body:
                if getattr(member, "name", None) == name:
                    first = min([member.lineno] + [d.lineno for d in member.decorator_list])
                    return first, member.end_lineno
    raise AssertionError(f"{cls}::{name} not found")


def edit_view_ops(text):
    """One body edited, one test added, one removed, one changed in comments/whitespace only."""
    edited = text.replace("        v = t.view(25)\n", "        v = t.view(-1)\n", 1)
    assert edited != text
    first, last = function_lines(edited, "TestViewOps", "test_unfold_view")
    lines = edited.splitlines(keepends=True)
    edited = "".join(lines[:first - 1] + lines[last:])
    before = edited
    edited = edited.replace(
        "        v = torch.reshape(t, (25,))\n",
        "        # only a comment and spacing change here\n        v = torch.reshape( t, (25, ) )\n\n", 1)
    assert edited != before
    return edited.replace(
        "class TestOldViewOps(TestCase):\n",
        "class TestOldViewOps(TestCase):\n    def test_delta_added(self, device):\n"
        "        self.assertTrue(True)\n\n", 1)


@pytest.fixture
def trees(tmp_path):
    """Two upstream trees built from the real suite: `from` as shipped, `to` edited."""
    old, new = tmp_path / "from", tmp_path / "to"
    for relpath in DELTA_FILES:
        for root in (old, new):
            (root / relpath).parent.mkdir(parents=True, exist_ok=True)
            (root / relpath).write_text((torch_root() / relpath).read_text())
    view_ops = new / DELTA_FILES[0]
    view_ops.write_text(edit_view_ops(view_ops.read_text()))
    bundled = new / DELTA_FILES[1]  # a module-level helper changes
    text = bundled.read_text()
    assert "def model_size(sm):\n" in text
    bundled.write_text(text.replace("def model_size(sm):\n", "def model_size(sm):\n    sm = sm\n", 1))
    numba = new / DELTA_FILES[2]  # a module-level helper is added
    numba.write_text(numba.read_text().replace("\nimport torch\n",
                                               "\nimport torch\n\n\ndef _helper():\n    return 1\n", 1))
    return old, new


def expected_delta(old):
    view_ops, bundled, numba = (count_tests(old / f) for f in DELTA_FILES)
    assert view_ops > 50 and bundled == 1 and numba == 8
    return {"new": 1, "changed": 1 + bundled + numba, "removed": 1,
            "unchanged": view_ops - 2, "view_ops": view_ops}


def delta(ws, *args):
    return subprocess.run([str(OOTCI), "select", "delta", *args], capture_output=True, text=True,
                          cwd=ws.path, timeout=300)


def test_delta_counts_new_changed_removed_and_ignores_comments_and_formatting(ws, trees):
    old, new = trees
    want = expected_delta(old)
    proc = delta(ws, "--from", str(old), "--to", str(new), "-o", "selection.json")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert (f"total: {want['new']} new, {want['changed']} changed, {want['removed']} removed, "
            f"{want['unchanged']} unchanged tests (3 of 3 files changed)") in out, out
    assert (f"test/test_view_ops.py: 1 new, 1 changed, 1 removed, {want['view_ops'] - 2} "
            "unchanged\n") in out, out
    assert ("test/test_bundled_images.py: 0 new, 1 changed (file-level helpers changed), "
            "0 removed, 0 unchanged") in out, out
    assert "test/test_numba_integration.py: 0 new, 8 changed (file-level helpers changed)" in out
    assert f"to evaluate: {want['new'] + want['changed']} tests" in out

    sel = json.loads((ws.path / "selection.json").read_text())
    assert sel["files"] == [] and sel["tests"] == []
    reasons = sel["reasons"]
    assert sorted(sel["bases"]) == sorted(reasons)
    assert reasons.pop("test/test_view_ops.py::TestViewOps::test_view_view") == "changed test"
    assert reasons.pop("test/test_view_ops.py::TestOldViewOps::test_delta_added") == "new test"
    assert reasons.pop("test/test_bundled_images.py::TestBundledImages::test_single_tensors") == \
        "file-level helpers changed"
    assert len(reasons) == 8
    assert all(k.startswith("test/test_numba_integration.py::TestNumbaIntegration::") and
               v == "file-level helpers changed" for k, v in reasons.items()), reasons
    assert sel["removed"] == ["test/test_view_ops.py::TestViewOps::test_unfold_view"]
    assert "test/test_view_ops.py::TestViewOps::test_reshape_view" not in sel["bases"]

    # The same trees as two commits of a git checkout give the same counts.
    repo = ws.path / "pytorch"
    (repo / "test").mkdir(parents=True)
    revs = []
    for tree in (old, new):
        for relpath in DELTA_FILES:
            (repo / relpath).write_text((tree / relpath).read_text())
        git(repo, "init", "-q") if not revs else None
        git(repo, "add", "test")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tree")
        revs.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                   text=True, check=True).stdout.strip())
    from_git = delta(ws, "--repo", str(repo), "--from", revs[0], "--to", revs[1],
                     "--files", "test/test_view_ops.py")
    assert from_git.returncode == 0, from_git.stderr
    assert (f"total: 1 new, 1 changed, 1 removed, {want['view_ops'] - 2} unchanged tests "
            "(1 of 1 files changed)") in from_git.stdout, from_git.stdout

    unknown = delta(ws, "--repo", str(repo), "--from", "no-such-rev", "--to", revs[1])
    assert unknown.returncode == 1 and "no-such-rev" in unknown.stderr


def test_a_selection_of_bases_runs_exactly_their_variants(ws):
    ws.ootci_yaml(run={"reruns": 0})
    ws.config("test_suite_config:\n  files:\n"
              "    - path: ${TORCH_ROOT}/test/test_view_ops.py\n"
              "      unlisted_test_mode: mandatory_success\n")
    view_ops = "test/test_view_ops.py"
    (ws.path / "selection.json").write_text(json.dumps({
        "files": [], "tests": [f"{view_ops}::TestViewOpsPRIVATEUSEONE::test_reshape_view_privateuseone"],
        "bases": [f"{view_ops}::TestViewOps::test_view_view", f"{view_ops}::TestOldViewOps::test_broadcast_to",
                  f"{view_ops}::TestViewOps::test_no_such_test"]}))
    proc = subprocess.run([str(OOTCI), "run", "--config", "ootci.yaml", "--select", "selection.json"],
                          capture_output=True, text=True, cwd=ws.path, timeout=600)
    run_id = next((line.split()[1] for line in proc.stdout.splitlines() if line.startswith("run ")), None)
    assert run_id, proc.stdout + proc.stderr
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")
    ran = {r[0].split("::", 1)[1]: r[1] for r in db.execute(
        "SELECT test_id, base FROM results WHERE run_id = ?", (run_id,))}
    broadcast = {t for t in ran if t.startswith("TestOldViewOpsPRIVATEUSEONE::test_broadcast_to_")}
    assert len(broadcast) > 5  # one variant per dtype
    assert set(ran) == broadcast | {"TestViewOpsPRIVATEUSEONE::test_view_view_privateuseone",
                                    "TestViewOpsPRIVATEUSEONE::test_reshape_view_privateuseone"}
    assert {ran[t] for t in broadcast} == {"TestOldViewOps::test_broadcast_to"}
