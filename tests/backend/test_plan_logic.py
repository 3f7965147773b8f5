"""Unit tests of the per-variant decisions in python/ootci_torch/plan.py (no PyTorch needed)."""
import pytest

from conftest import SOURCE_DIR

import sys
sys.path.insert(0, str(SOURCE_DIR / "python"))
from ootci_torch import plan as P  # noqa: E402


def make_plan(rules, unlisted="skip", supported_dtypes=None, supported_ops=None):
    return P.Plan({
        "schema": "ootci.plan", "version": 1,
        "backend": {"device_type": "some_device"},
        "files": [{"path": "/x/test_a.py", "relpath": "test/test_a.py", "unlisted_test_mode": unlisted,
                   "supported_dtypes": supported_dtypes, "supported_ops": supported_ops,
                   "rules": rules}],
    }).files["/x/test_a.py"]


def rule(cls, method, mode="mandatory_success", **extra):
    return {"class": cls, "method": method, "mode": mode, "source": f"cfg:{method}", **extra}


def test_last_matching_rule_wins_and_unlisted_uses_the_default():
    fp = make_plan([rule("A", "test_.*", "xfail"), rule("A", "test_b")], unlisted="xfail_strict")
    assert P.decide(fp, "A", "test_a", "test_a_dev", None, ()).mode == "xfail"
    assert P.decide(fp, "A", "test_b", "test_b_dev", None, ()).mode == "mandatory_success"
    assert P.decide(fp, "B", "test_b", "test_b_dev", None, ()).mode == "xfail_strict"


def test_method_regex_is_a_full_match_on_the_method_or_the_variant():
    fp = make_plan([rule(None, "test_add"), rule(None, "test_mul_dev_float.*", "xfail")])
    assert P.decide(fp, "A", "test_add_more", "test_add_more_dev", None, ()).keep is False
    assert P.decide(fp, "A", "test_mul", "test_mul_dev_float32", None, ("float32",)).mode == "xfail"
    assert P.decide(fp, "A", "test_mul", "test_mul_dev_int64", None, ("int64",)).keep is False


def test_effective_dtypes():
    # (global ∩ op ∩ test) + include − exclude
    fp = make_plan(
        [rule("A", "test_x", dtypes={"include": [{"name": "float64"}, {"name": "bool"}],
                                     "exclude": ["bool", "int64"]})],
        supported_dtypes=[{"name": "float32"}, {"name": "int64"}, {"name": "float16"}],
        supported_ops=[{"name": "add", "dtypes": [{"name": "float32"}, {"name": "int64"}]}])
    kept = {d for d in ("float16", "float32", "float64", "int64", "bool", "int8")
            if P.decide(fp, "A", "test_x", "v", "add", (d,)).keep}
    assert kept == {"float32", "float64"}


def test_ops_admission_and_edits():
    fp = make_plan([rule("A", "test_x", ops={"include": [{"name": "sub", "tags": ["t"]}],
                                             "exclude": ["mul"]})],
                   supported_ops=[{"name": "add"}, {"name": "mul"}])
    keep = {op: P.decide(fp, "A", "test_x", "v", op, ()).keep for op in ("add", "mul", "sub", "div")}
    assert keep == {"add": True, "mul": False, "sub": True, "div": False}
    assert "t" in P.decide(fp, "A", "test_x", "v", "sub", ()).marks


def test_force_xfail_flips_only_mandatory_success():
    fp = make_plan([rule("A", "test_x"), rule("A", "test_y", "xfail_strict")],
                   supported_dtypes=[{"name": "float32", "force_xfail": True}, {"name": "int64"}])
    assert P.decide(fp, "A", "test_x", "v", None, ("float32",)).mode == "xfail"
    assert P.decide(fp, "A", "test_x", "v", None, ("int64",)).mode == "mandatory_success"
    assert P.decide(fp, "A", "test_y", "v", None, ("float32",)).mode == "xfail_strict"


def test_precision_comes_from_the_most_specific_place():
    fp = make_plan(
        [rule("A", "test_inc", dtypes={"include": [{"name": "float32", "precision": {"atol": 1}}]},
              precision={"atol": 2}),
         rule("A", "test_rule", precision={"atol": 2}),
         rule("A", "test_op")],
        supported_dtypes=[{"name": "float32", "precision": {"atol": 4}}],
        supported_ops=[{"name": "add", "dtypes": [{"name": "float32", "precision": {"atol": 3}}]}])
    atol = lambda m, op: P.decide(fp, "A", m, "v", op, ("float32",)).precision.atol  # noqa: E731
    assert (atol("test_inc", "add"), atol("test_rule", "add"), atol("test_op", "add"),
            atol("test_op", None)) == (1, 2, 3, 4)


def test_marks_are_identifiers():
    fp = make_plan([rule("A", "test_x", tags=["smoke"])])
    d = P.decide(fp, "A", "test_x", "v", "nn.functional.relu", ("float32",))
    assert d.marks == ["smoke", "op__nn_functional_relu", "dtype__float32"]


def test_rejects_plans_it_does_not_understand():
    with pytest.raises(P.PlanError, match="version 1"):
        P.Plan({"schema": "ootci.plan", "version": 2, "backend": {"device_type": "d"}})
    with pytest.raises(P.PlanError, match="invalid regex"):
        make_plan([rule("A", "test_(")])


def test_an_op_answers_to_its_name_and_its_formatted_name():
    fp = make_plan([rule("A", "test_x", ops={"exclude": ["_masked_std"]})],
                   supported_ops=[{"name": "_masked.var"}, {"name": "_masked_std"}])
    keep = lambda name, formatted: P.decide(fp, "A", "test_x", "v", (name, formatted), ()).keep  # noqa: E731
    assert keep("_masked.var", "_masked_var") is True
    assert keep("_masked.std", "_masked_std") is False  # excluded by its formatted name
    assert keep("_masked.sum", "_masked_sum") is False  # not supported
