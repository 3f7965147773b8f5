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


def test_class_part_is_dropped_and_exact_names_win_over_regexes():
    # Spyre matches base method names only; exact entries come before regexes whatever the order.
    fp = make_plan([rule("A", "test_.*", "xfail"), rule("Other", "test_b")], unlisted="xfail_strict")
    assert P.decide(fp, "A", "test_a", "test_a_dev", None, ()).mode == "xfail"
    assert P.decide(fp, "A", "test_b", "test_b_dev", None, ()).mode == "mandatory_success"
    assert P.decide(fp, "B", "test_b", "test_b_dev", None, ()).mode == "mandatory_success"
    assert P.decide(fp, "B", "other", "other_dev", None, ()).mode == "xfail_strict"


def test_a_regex_matches_the_whole_base_name_never_a_variant_name():
    fp = make_plan([rule(None, "test_add"), rule(None, "test_mul_dev_float.*", "xfail")])
    assert P.decide(fp, "A", "test_add_more", "test_add_more_dev", None, ()).mode == "skip"
    assert P.decide(fp, "A", "test_mul", "test_mul_dev_float32", None, ("float32",)).rule is None


def test_of_several_entries_the_one_covering_the_dtype_wins_else_unrestricted_else_first():
    fp = make_plan([rule("A", "test_x", "xfail"),
                    rule("A", "test_x", "skip", dtypes={"include": [{"name": "bfloat16"}]}),
                    rule("A", "test_x", "xfail_strict", dtypes={"include": [{"name": "int8"}]})])
    mode = lambda d: P.decide(fp, "A", "test_x", "v", None, (d,)).mode  # noqa: E731
    assert (mode("bfloat16"), mode("int8"), mode("float32")) == ("skip", "xfail_strict", "xfail")
    # Only restricted entries, none covering the dtype: the first.
    fp = make_plan([rule("A", "test_y", "xfail", dtypes={"include": [{"name": "int8"}]}),
                    rule("A", "test_y", "skip", dtypes={"include": [{"name": "int16"}]})])
    assert P.decide(fp, "A", "test_y", "v", None, ("float32",)).mode == "xfail"


def test_the_default_unlisted_mode_is_xfail():
    fp = P.Plan({"schema": "ootci.plan", "version": 1, "backend": {"device_type": "d"},
                 "files": [{"path": "/x/t.py", "rules": []}]}).files["/x/t.py"]
    assert P.decide(fp, "A", "test_q", "v", None, ()).mode == "xfail"


def test_labels_on_a_test_select_it_only_for_those_labels(monkeypatch):
    fp = make_plan([rule("A", "test_x", labels=["integration"]), rule("A", "test_y")])
    monkeypatch.setenv("OOTCI_LABELS", "unit,trunk")
    assert P.decide(fp, "A", "test_x", "v", None, ()).keep is False
    assert P.decide(fp, "A", "test_y", "v", None, ()).keep is True
    monkeypatch.setenv("OOTCI_LABELS", "integration")
    assert P.decide(fp, "A", "test_x", "v", None, ()).keep is True
    monkeypatch.delenv("OOTCI_LABELS")
    assert P.decide(fp, "A", "test_x", "v", None, ()).keep is True


def test_effective_dtypes():
    # (global ∩ op ∩ test) + include − exclude; the op's dtypes replace the OpInfo's on its @ops
    # list (device_base), so here only global, include and exclude decide.
    fp = make_plan(
        [rule("A", "test_x", dtypes={"include": [{"name": "float64"}, {"name": "bool"}],
                                     "exclude": ["bool", "int64"]})],
        supported_dtypes=[{"name": "float32"}, {"name": "int64"}, {"name": "float16"}],
        supported_ops=[{"name": "add", "dtypes": [{"name": "float32"}, {"name": "int64"}]}])
    kept = {d for d in ("float16", "float32", "float64", "int64", "bool", "int8")
            if P.decide(fp, "A", "test_x", "v", "add", (d,)).keep}
    assert kept == {"float16", "float32", "float64"}


def test_an_empty_supported_dtypes_list_is_resolved_away():
    # `ootci plan resolve` writes null for an empty list (Spyre: no filter); null keeps everything.
    fp = make_plan([rule("A", "test_x")], supported_dtypes=None)
    assert P.decide(fp, "A", "test_x", "v", None, ("complex64",)).keep


def test_op_exclusion_and_include_tags():
    # supported_ops filters @ops lists before variants exist (device_base); per variant only
    # ops.exclude removes, also every variant of an excluded op ("addmm_decomposed").
    fp = make_plan([rule("A", "test_x", ops={"include": [{"name": "sub", "tags": ["t"]}],
                                             "exclude": ["mul", "addmm"]})],
                   supported_ops=[{"name": "add"}, {"name": "mul"}])
    keep = {op: P.decide(fp, "A", "test_x", "v", op, ()).keep
            for op in ("add", "mul", "sub", "div", "addmm_decomposed")}
    assert keep == {"add": True, "mul": False, "sub": True, "div": True, "addmm_decomposed": False}
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


def test_any_string_tag_becomes_a_selectable_mark():
    fp = make_plan([rule("A", "test_x", tags=["smoke", "model__gpt-oss-20b", "torch.mul.1_spyre",
                                              "8bit"])])
    d = P.decide(fp, "A", "test_x", "v", "nn.functional.relu", ("float32",))
    assert d.marks == ["smoke", "model__gpt_oss_20b", "torch_mul_1_spyre", "_8bit",
                       "op__nn_functional_relu", "dtype__float32"]
    assert all(m.isidentifier() for m in d.marks)


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


def test_a_model_op_variant_takes_its_own_rule_and_its_includes_tags():
    # Two includes of one op with different tags (two call sites of torch.mul in a model), and two
    # rules naming the same test (two models): each variant is decided by the include it came from.
    fp = make_plan([
        rule(None, "test_model_ops_db", "xfail", tags=["model__a"],
             ops={"include": [{"name": "torch.mul", "tags": ["torch.mul.1"]},
                              {"name": "torch.mul", "tags": ["torch.mul.2"]}]}),
        rule(None, "test_model_ops_db", "mandatory_success", tags=["model__b"])])
    d = P.decide(fp, "T", "test_model_ops_db", "v", ("torch.mul", "torch_mul__0"), ("float32",),
                 rule_source="cfg:test_model_ops_db", op_tags=["torch.mul.1"])
    assert d.mode == "xfail" and "torch_mul_1" in d.marks and "torch_mul_2" not in d.marks
    second = fp.rules[1]
    second.source = "second"
    d = P.decide(fp, "T", "test_model_ops_db", "v", ("torch.mul", "torch_mul__1"), ("float32",),
                 rule_source="second", op_tags=[])
    assert d.mode == "mandatory_success" and d.marks[0] == "model__b"
