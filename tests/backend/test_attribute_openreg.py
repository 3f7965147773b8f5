"""Issue 36: `ootci attribute` on PyTorch's OpenReg, the upstream reference device, in the torch 2.6
bed. Two scenarios, as on a vendor's CI: OpenReg itself moved (a commit breaks one op), and the
upstream test moved (it now calls an op OpenReg lacks). Nothing in the bed or in ootci knows the
device beyond ootci.yaml's `device_type: openreg`.

tests/fixtures/attribution/make_fixture.py (make_openreg_fixture) builds the bed.
"""
import pytest

pytest.register_assert_rewrite("attribution_harness")  # before importing it
from attribution_harness import (  # noqa: E402
    OPENREG_VIEW_OPS, assert_commit, filler_commits, max_bisection_probes, openreg_break_op, subject,
    tests_expose_openreg_failure)

pytest_plugins = ["attribution_harness"]  # the bed fixtures

# What each breaking commit turns red, found by running the plan after it (deterministic: the
# failures are Python errors raised on the test's side, not in OpenReg's device daemon).
BROKEN_BY_OPENREG = {OPENREG_VIEW_OPS + t + "_openreg" for t in (
    "test_view_view", "test_view_as_view", "test_reshape_view", "test_reshape_as_view")}
BROKEN_BY_UPSTREAM_TEST = {OPENREG_VIEW_OPS + "test_view_view_openreg"}


def test_openreg_moved_the_breaking_openreg_commit_is_the_culprit(openreg_bed):
    bed = openreg_bed
    green = bed.run("success")
    assert bed.manifest(green)["targets"] == {
        "backend": bed.fx.head(bed.backend), "tests": bed.fx.head(bed.upstream), "core": ""}  # no core layer here

    before = filler_commits(bed.backend, 2)
    culprit = openreg_break_op(bed.fx)
    after = filler_commits(bed.backend, 2)
    red = bed.run("failure")
    assert bed.failing(red) == BROKEN_BY_OPENREG

    a = bed.attribute(red)
    v = a.verdict
    assert v["category"] == "backend", a
    assert v["suspected_upstream"] is None, a
    assert_commit(a, v["culprit"], "backend", culprit, subject(bed.backend, culprit))
    assert v["probes"] <= max_bisection_probes(len(before) + 1 + len(after)), a


def test_the_upstream_test_moved_the_test_change_is_the_suspect_on_openreg(openreg_bed):
    bed = openreg_bed
    bed.run("success")
    filler_commits(bed.upstream, 2)
    culprit = tests_expose_openreg_failure(bed.fx)
    filler_commits(bed.upstream, 1)
    filler_commits(bed.backend, 2)  # OpenReg moved too, harmlessly
    red = bed.run("failure")
    assert bed.failing(red) == BROKEN_BY_UPSTREAM_TEST

    a = bed.attribute(red)
    v = a.verdict
    assert v["category"] == "upstream", a
    assert_commit(a, v["suspected_upstream"], "tests", culprit, subject(bed.upstream, culprit))
    assert_commit(a, v["culprit"], "tests", culprit, subject(bed.upstream, culprit))
    assert v["probes"] <= max_bisection_probes(4) + max_bisection_probes(2), a
