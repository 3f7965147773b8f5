"""Issue 9's acceptance when more than one thing changed: two targets moved (the guilty one must be
told apart), or the environment broke (infra).

See test_attribute.py and tests/fixtures/attribution/README.md for the test bed.
"""
import pytest

pytest.register_assert_rewrite("attribution_harness")  # before importing it
from attribution_harness import (  # noqa: E402
    BROKEN_BY_BACKEND, BROKEN_BY_CORE, assert_commit, backend_break_op, core_break_op, filler_commits,
    max_bisection_probes, subject)

pytest_plugins = ["attribution_harness"]  # the bed fixtures


def test_backend_and_core_moved_the_core_commit_is_the_suspect_not_the_backend(bed):
    bed.run("success")
    filler_commits(bed.backend, 3)
    filler_commits(bed.core, 1)
    culprit = core_break_op(bed.fx)
    filler_commits(bed.core, 2)
    red = bed.run("failure")
    assert bed.failing(red) == set(BROKEN_BY_CORE)

    a = bed.attribute(red)
    v = a.verdict
    assert v["category"] == "upstream", a
    assert_commit(a, v["suspected_upstream"], "core", culprit, subject(bed.core, culprit))
    assert_commit(a, v["culprit"], "core", culprit, subject(bed.core, culprit))


def test_backend_and_core_moved_the_backend_commit_is_the_culprit(bed):
    bed.run("success")
    filler_commits(bed.backend, 2)
    culprit = backend_break_op(bed.fx)
    filler_commits(bed.backend, 2)
    filler_commits(bed.core, 3)
    red = bed.run("failure")
    assert bed.failing(red) == set(BROKEN_BY_BACKEND)

    a = bed.attribute(red)
    v = a.verdict
    assert v["category"] == "backend", a
    assert v["suspected_upstream"] is None, a
    assert_commit(a, v["culprit"], "backend", culprit, subject(bed.backend, culprit))
    assert v["probes"] <= max_bisection_probes(5), a


def test_the_interpreter_went_missing_is_infra(bed):
    bed.run("success")
    filler_commits(bed.backend, 1)
    bed.fx.python.unlink()  # ootci.yaml's backend.python
    red = bed.run("failure")
    assert bed.failing(red) == {"test/test_view_ops.py"}  # the whole file: pytest could not start

    a = bed.attribute(red)
    v = a.verdict
    assert v["category"] == "infra", a
    assert v["culprit"] is None and v["suspected_upstream"] is None, a


def test_the_backend_cannot_build_in_this_environment_is_infra(bed, tmp_path):
    bed.run("success")
    filler_commits(bed.backend, 1)
    # No built extension to reuse and no compiler: every revision's build fails here.
    # torch.utils.cpp_extension takes the compiler from CXX.
    env = {"OOTCI_CACHE_DIR": tmp_path / "empty-cache", "CXX": "/nonexistent"}
    red = bed.run("failure", env=env)
    assert bed.failing(red) == {"test/test_view_ops.py"}

    a = bed.attribute(red, env=env)
    v = a.verdict
    assert v["category"] == "infra", a
    assert v["culprit"] is None and v["suspected_upstream"] is None, a
