"""Issue 9's acceptance when the answer is not one moving target: two targets moved (the guilty one
must be told apart), an intermittent test (flake), and a broken environment (infra).

See test_attribute.py and tests/fixtures/attribution/README.md for the test bed.
"""
from attribution_harness import (BROKEN_BY_BACKEND, BROKEN_BY_CORE, INTERMITTENT,  # noqa: F401
                                 assert_commit, backend_break_op, bed, core_break_op, filler_commits,
                                 intermittent_bed, max_bisection_probes, subject, upstream_base)


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
