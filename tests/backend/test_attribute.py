"""Issue 9's acceptance, one moving target at a time: a green run, then one repository moves and
the run turns red, and `ootci attribute` must name the commit that broke it, or call an
intermittent failure a flake.

The test bed (tests/fixtures/attribution) is three git repositories: the upstream test tree, a
core-behaviour layer loaded into every test process, and the reference backend; each breaking
commit breaks one real op on the device. test_attribute_mixed.py has the scenarios where several
targets move and the infra failures.
"""
import json

import pytest

pytest.register_assert_rewrite("attribution_harness")  # before importing it
from attribution_harness import (  # noqa: E402
    BROKEN_BY_BACKEND, BROKEN_BY_CORE, BROKEN_BY_TESTS, INTERMITTENT, assert_commit, backend_break_op,
    core_break_op, filler_commits, max_bisection_probes, subject, tests_expose_failure)

pytest_plugins = ["attribution_harness"]  # the bed fixtures


def test_only_the_backend_moved_the_breaking_backend_commit_is_the_culprit(bed):
    green = bed.run("success")
    assert bed.manifest(green)["targets"] == {
        "backend": bed.fx.head(bed.backend), "tests": bed.fx.head(bed.upstream), "core": bed.fx.head(bed.core)}

    before = filler_commits(bed.backend, 3)
    culprit = backend_break_op(bed.fx)
    after = filler_commits(bed.backend, 3)
    red = bed.run("failure")
    assert bed.failing(red) == set(BROKEN_BY_BACKEND)
    assert bed.manifest(red)["targets"]["backend"] == after[-1]

    a = bed.attribute(red)
    v = a.verdict
    assert v["category"] == "backend", a
    assert v["suspected_upstream"] is None, a
    assert_commit(a, v["culprit"], "backend", culprit, subject(bed.backend, culprit))
    commits = len(before) + 1 + len(after)
    assert v["probes"] <= max_bisection_probes(commits), a

    # The completed callback carries the verdict as written, where upstream CRCR reads it (the
    # default report.relay): inside workflow, with the analyzer as an object.
    payload = bed.fx.root / "payload.json"
    payload.write_text(json.dumps({"delivery_id": "d-attr-1", "event_type": "pull_request",
                                   "payload": {"pull_request": {"number": 1}}}))
    report = bed.ootci("report", "--status", "completed", "--run", red, "--config", str(bed.fx.config),
                       "--payload", str(payload), "--run-id", "7", "--job-name", "upstream tests",
                       "--workflow-name", "ootci", "--dry-run")
    assert report.returncode == 0, report.stderr
    body = json.loads(report.stdout)
    assert "triage_verdict" not in body, report.stdout
    assert body["workflow"]["triage_verdict"] == {**v, "analyzer": {"name": "ootci"}}, report.stdout
    assert body["workflow"]["conclusion"] == "failure", report.stdout


def test_only_the_upstream_tests_moved_the_test_change_is_the_suspect(bed):
    bed.run("success")
    filler_commits(bed.upstream, 2)
    culprit = tests_expose_failure(bed.fx)
    filler_commits(bed.upstream, 2)
    red = bed.run("failure")
    assert bed.failing(red) == set(BROKEN_BY_TESTS)

    a = bed.attribute(red)
    v = a.verdict
    assert v["category"] == "upstream", a
    assert_commit(a, v["suspected_upstream"], "tests", culprit, subject(bed.upstream, culprit))
    assert_commit(a, v["culprit"], "tests", culprit, subject(bed.upstream, culprit))
    assert v["probes"] <= max_bisection_probes(5), a


def test_only_the_core_moved_the_core_change_is_the_suspect(bed):
    bed.run("success")
    filler_commits(bed.core, 2)
    culprit = core_break_op(bed.fx)
    filler_commits(bed.core, 1)
    red = bed.run("failure")
    assert bed.failing(red) == set(BROKEN_BY_CORE)

    a = bed.attribute(red)
    v = a.verdict
    assert v["category"] == "upstream", a
    assert_commit(a, v["suspected_upstream"], "core", culprit, subject(bed.core, culprit))
    assert_commit(a, v["culprit"], "core", culprit, subject(bed.core, culprit))
    assert v["probes"] <= max_bisection_probes(4), a


def test_a_test_that_fails_three_times_then_passes_is_a_flake(intermittent_bed):
    bed = intermittent_bed
    bed.run("success")
    filler_commits(bed.backend, 1)
    counter = bed.fx.root / "intermittent.count"
    env = {"OOTCI_FIXTURE_INTERMITTENT_COUNTER": counter}
    red = bed.run("failure", env=env)  # the first try and both reruns fail
    assert bed.failing(red) == {INTERMITTENT}
    assert counter.stat().st_size == 3

    a = bed.attribute(red, env=env)
    v = a.verdict
    assert v["category"] == "flake", a
    assert v["culprit"] is None and v["suspected_upstream"] is None, a
    assert counter.stat().st_size >= 4, a  # the flake check really ran the test again
    assert INTERMITTENT.split("::")[-1] in a.triage_md, a.triage_md
