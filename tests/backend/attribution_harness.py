"""Harness for issue 9's acceptance (test_attribute*.py): `ootci run` and `ootci attribute` on the
attribution test bed (tests/fixtures/attribution), whose three repositories move independently.
"""
import json
import math
import os
import pathlib
import re
import sqlite3
import subprocess
import sys

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("OOTCI_SOURCE_DIR") or pathlib.Path(__file__).resolve().parents[2])
BINARY_DIR = pathlib.Path(os.environ.get("OOTCI_BINARY_DIR") or SOURCE_DIR / "build")
OOTCI = BINARY_DIR / "ootci"

sys.path.insert(0, str(SOURCE_DIR / "tests" / "fixtures" / "attribution"))
import make_fixture  # noqa: E402

from make_fixture import (BROKEN_BY_BACKEND, BROKEN_BY_CORE, BROKEN_BY_TESTS,  # noqa: E402,F401
                          INTERMITTENT, OPENREG_VIEW_OPS, backend_break_op, core_break_op,
                          filler_commits, openreg_break_op, tests_expose_failure,
                          tests_expose_openreg_failure)

CATEGORIES = {"upstream", "backend", "infra", "flake", "unknown"}
CONFIDENCES = {"high", "medium", "low"}
RUN_LINE = re.compile(r"^run (\S+) finished \((success|failure)\)", re.M)


@pytest.fixture(scope="session")
def upstream_base(tmp_path_factory):
    """One upstream repo (the real test tree, committed) per session; each bed clones it."""
    if not OOTCI.exists():
        pytest.fail(f"{OOTCI} is missing; build first (scripts/setup)", pytrace=False)
    root = os.environ.get("TORCH_ROOT")
    if not root or not (pathlib.Path(root) / "test" / "test_view_ops.py").exists():
        pytest.fail("TORCH_ROOT must name the upstream PyTorch source tree; scripts/setup prepares it",
                    pytrace=False)
    return make_fixture.build_upstream_base(tmp_path_factory.mktemp("upstream-base") / "upstream", root)


@pytest.fixture
def bed(tmp_path, upstream_base):
    return Bed(make_fixture.make_fixture(tmp_path / "bed", upstream_base=upstream_base))


@pytest.fixture
def openreg_bed(tmp_path, upstream_base):
    """The bed with OpenReg as the backend; only where OOTCI_OPENREG_DIR names its build (the torch
    2.6 bed: scripts/lib/openreg.sh)."""
    openreg = os.environ.get("OOTCI_OPENREG_DIR")
    if not openreg:
        pytest.skip("OOTCI_OPENREG_DIR is not set: OpenReg is built for the torch 2.6 bed only")
    return Bed(make_fixture.make_openreg_fixture(tmp_path / "bed", openreg, upstream_base=upstream_base))


@pytest.fixture
def intermittent_bed(tmp_path, upstream_base):
    return Bed(make_fixture.make_fixture(tmp_path / "bed", upstream_base=upstream_base, intermittent=True))


class Attribution:
    def __init__(self, proc, verdict, triage_md):
        self.proc = proc
        self.verdict = verdict
        self.triage_md = triage_md

    def __str__(self):  # what a failed assertion shows
        return (f"ootci attribute exited {self.proc.returncode}\n--- verdict:\n"
                f"{json.dumps(self.verdict, indent=1)}\n--- stdout (tail):\n{self.proc.stdout[-5000:]}"
                f"\n--- stderr (tail):\n{self.proc.stderr[-5000:]}")


class Bed:
    """A built test bed plus the commands a CI job runs on it."""

    def __init__(self, fx):
        self.fx = fx
        self.backend, self.upstream, self.core = fx.backend, fx.upstream, fx.core

    def ootci(self, *args, env=None, timeout=600):
        return subprocess.run([str(OOTCI), *args], capture_output=True, text=True, cwd=self.fx.root,
                              env=self.fx.env(**(env or {})), timeout=timeout)

    def run(self, expect, env=None) -> str:
        """`ootci run`; asserts its verdict ("success"/"failure") and returns the run id."""
        proc = self.ootci("run", "--config", str(self.fx.config), env=env)
        m = RUN_LINE.search(proc.stdout)
        assert m, f"ootci run exited {proc.returncode} without a run line:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        assert m.group(2) == expect, f"expected {expect}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        assert proc.returncode == (0 if expect == "success" else 1), proc.stderr[-3000:]
        return m.group(1)

    def failing(self, run_id) -> set:
        db = sqlite3.connect(self.fx.workspace / "evidence.db")
        try:
            return {t for (t,) in db.execute(
                "SELECT test_id FROM results WHERE run_id = ? AND outcome IN ('failed', 'error')", (run_id,))}
        finally:
            db.close()

    def manifest(self, run_id) -> dict:
        return json.loads((self.fx.workspace / "runs" / run_id / "manifest.json").read_text())

    def attribute(self, run_id, env=None) -> Attribution:
        proc = self.ootci("attribute", "--config", str(self.fx.config), "--run", run_id, env=env)
        run_dir = self.fx.workspace / "runs" / run_id
        verdict_path, md_path = run_dir / "triage_verdict.json", run_dir / "triage.md"
        verdict = json.loads(verdict_path.read_text()) if verdict_path.exists() else None
        md = md_path.read_text() if md_path.exists() else None
        a = Attribution(proc, verdict, md)
        assert proc.returncode == 0 and verdict is not None, a
        assert_crcr_rules(a)
        assert md, f"{md_path} is missing or empty\n{a}"
        return a


def assert_crcr_rules(a: Attribution):
    """The relay's rules for a triage_verdict (src/relay/callback_body.cc), plus the spec's fields."""
    v = a.verdict
    assert isinstance(v, dict), a
    assert v.get("schema_version") == 1, a
    assert v.get("category") in CATEGORIES, a
    assert v.get("confidence") in CONFIDENCES, a
    assert isinstance(v.get("summary"), str) and v["summary"], a
    assert len(v["summary"]) <= 1000, a  # characters, as upstream CRCR cuts it
    assert isinstance(v.get("evidence"), list) and len(v["evidence"]) <= 10, a
    assert all(isinstance(e, dict) for e in v["evidence"]), a
    assert len(json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()) <= 16 * 1024, a
    assert v.get("analyzer") == "ootci", a
    for key in ("suspected_upstream", "culprit"):
        assert key in v and (v[key] is None or isinstance(v[key], dict)), (key, str(a))
    for key in ("probes", "executions", "primary_executions"):
        assert isinstance(v.get(key), int) and not isinstance(v.get(key), bool) and v[key] >= 0, (key, str(a))


def assert_commit(a: Attribution, obj: dict, target: str, sha: str, subject: str):
    """`obj` (culprit or suspected_upstream) names this commit of this target."""
    assert obj is not None, a
    assert obj.get("target") == target, a
    assert obj.get("sha") == sha, a
    assert obj.get("subject") == subject, a
    pr = re.search(r"\(#(\d+)\)$", subject)  # upstream's squash-merge subjects end in "(#N)"
    assert obj.get("pr") == (int(pr.group(1)) if pr else None), a
    # The human-readable report names the culprit, in the file and on stdout.
    assert sha[:7] in a.triage_md, f"triage.md does not name {sha[:7]}:\n{a.triage_md}"
    assert sha[:7] in a.proc.stdout, a


def max_bisection_probes(commits: int) -> int:
    return math.ceil(math.log2(commits)) + 2


def subject(repo, sha) -> str:
    return make_fixture.git(repo, "log", "-1", "--format=%s", sha)
