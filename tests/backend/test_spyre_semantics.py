"""Spyre's config semantics, row by row (docs/plan.md, "What each key means"), each on a real
upstream PyTorch 1.13.1 file and the reference backend. Every case states what the previous
ootci rule gave, so each would fail under it."""
import json
import pathlib
import re
import textwrap
import xml.etree.ElementTree as ET

from conftest import SOURCE_DIR

CURRENT = SOURCE_DIR / "tests" / "fixtures" / "spyre-configs-current"
VIEW_OPS = "test_view_ops.py"
BINARY = "test_binary_ufuncs.py"


def suite(path, tests, unlisted="unlisted_test_mode: skip", glob="", labels="[unit]"):
    body = textwrap.indent(textwrap.dedent(tests).strip("\n"), " " * 8)
    text = (f"test_suite_config:\n  labels: {labels}\n  files:\n"
            f"    - path: ${{TORCH_ROOT}}/test/{path}\n")
    if unlisted:
        text += f"      {unlisted}\n"
    text += "      tests:\n" + body + "\n"
    if glob:
        text += "  global:\n" + textwrap.indent(textwrap.dedent(glob).strip("\n"), "    ") + "\n"
    return text


def variants(run, method):
    """Variant names of `method` (any device class) among the collected tests."""
    return sorted(n.split("::")[1] for n in run.collected
                  if re.fullmatch(rf"{method}(_.*)?", n.split("::")[1]))


def test_the_class_part_is_dropped(ws):
    # Before: the class had to match, so a wrong class left test_view unlisted (skipped).
    ws.config(suite(VIEW_OPS, "- names: [SomeOtherClass::test_view_view]"))
    assert variants(ws.pytest(VIEW_OPS, collect_only=True), "test_view_view") == [
        "test_view_view_privateuseone"]


def test_a_regex_matches_base_names_never_variant_names(ws):
    # Before: the regex also matched the variant name, so these variants ran.
    ws.config(suite(VIEW_OPS, "- names: [TestOldViewOps::test_broadcast_to_privateuseone_.*]"))
    assert variants(ws.pytest(VIEW_OPS, collect_only=True), "test_broadcast_to") == []


def test_exact_names_win_over_regexes(ws):
    # Before: the last matching rule won, so the regex (skip) removed test_view_view.
    ws.config(suite(VIEW_OPS, """
        - names: [TestViewOps::test_view_view]
        - names: [TestViewOps::test_view_vi.*]
          mode: skip
    """))
    assert variants(ws.pytest(VIEW_OPS, collect_only=True), "test_view_view") == [
        "test_view_view_privateuseone"]


def test_the_entry_covering_the_variants_dtype_wins(ws):
    # Before: the last rule won for every variant: all of them skipped.
    ws.config(suite(VIEW_OPS, """
        - names: [TestOldViewOps::test_broadcast_to]
          mode: xfail
        - names: [TestOldViewOps::test_broadcast_to]
          mode: skip
          edits:
            dtypes:
              include: [{name: float32}]
    """))
    got = variants(ws.pytest(VIEW_OPS, collect_only=True), "test_broadcast_to")
    assert "test_broadcast_to_privateuseone_float64" in got
    assert "test_broadcast_to_privateuseone_float32" not in got


def test_a_name_twice_with_two_modes_keeps_the_first(ws):
    # Before: an error; nothing ran.
    ws.config(suite(VIEW_OPS, """
        - names: [TestViewOps::test_view_view]
          mode: xfail
        - names: [TestViewOps::test_view_view]
          mode: skip
    """))
    check = ws.ootci("plan", "check", "configs/suite.yaml")
    assert "the first one wins" in check.stderr
    run = ws.pytest(VIEW_OPS)
    assert run.outcomes == {"TestViewOpsPRIVATEUSEONE::test_view_view_privateuseone": "XPASS"}


def test_unlisted_tests_default_to_xfail(ws):
    # Before: the default was skip, so no unlisted test existed.
    ws.config(suite(VIEW_OPS, "- names: [TestViewOps::test_view_view]", unlisted=""))
    run = ws.pytest(VIEW_OPS, collect_only=True)
    assert len(run.collected) > 100
    assert ws.plan()["files"][0]["unlisted_test_mode"] == "xfail"


def test_an_empty_supported_dtypes_filters_nothing(ws):
    # Before: an empty list removed every dtype variant.
    ws.config(suite(VIEW_OPS, "- names: [TestOldViewOps::test_broadcast_to]",
                    glob="supported_dtypes: []"))
    assert len(variants(ws.pytest(VIEW_OPS, collect_only=True), "test_broadcast_to")) >= 10


def test_supported_ops_leave_a_list_without_any_listed_op_whole(ws):
    # Before: a strict filter: sin is no binary ufunc, so every variant went.
    ws.config(suite(BINARY, "- names: [TestBinaryUfuncs::test_contig_vs_every_other]",
                    glob="supported_dtypes: [{name: float32}]\nsupported_ops: [sin]"))
    got = variants(ws.pytest(BINARY, collect_only=True), "test_contig_vs_every_other")
    assert len(got) > 20 and "test_contig_vs_every_other_add_privateuseone_float32" in got


def test_an_ops_dtypes_replace_the_opinfos(ws):
    # Before: the op's dtypes were intersected with the OpInfo's: sub has no bool variant.
    ws.config(suite(BINARY, "- names: [TestBinaryUfuncs::test_contig_vs_every_other]",
                    glob="supported_ops: [{name: sub, dtypes: [{name: bool}, {name: float32}]}]"))
    got = variants(ws.pytest(BINARY, collect_only=True), "test_contig_vs_every_other")
    assert got == ["test_contig_vs_every_other_sub_privateuseone_bool",
                   "test_contig_vs_every_other_sub_privateuseone_float32"]


def test_any_string_tag_is_a_selectable_mark_and_a_junit_property(ws, tmp_path):
    # Before: such tags were refused (not identifiers) and nothing ran.
    ws.config(suite(VIEW_OPS, """
        - names: [TestViewOps::test_view_view]
          tags: [model__gpt-oss-20b, torch.mul.1_spyre]
        - names: [TestViewOps::test_reshape_view]
    """))
    xml = tmp_path / "junit.xml"
    run = ws.pytest(VIEW_OPS, args=["-m", "model__gpt_oss_20b", f"--junitxml={xml}"])
    assert run.outcomes == {"TestViewOpsPRIVATEUSEONE::test_view_view_privateuseone": "PASSED"}
    case = ET.parse(xml).find(".//testcase[@name='test_view_view_privateuseone']")
    tags = [p.get("value") for p in case.iter("property") if p.get("name") == "tag"]
    assert tags == ["model__gpt-oss-20b", "torch.mul.1_spyre"]


def test_labels_select_files_and_tests(ws):
    # Before: labels were carried and unused.
    ws.config(suite(VIEW_OPS, """
        - names: [TestViewOps::test_view_view]
        - names: [TestViewOps::test_reshape_view]
          labels: [integration]
    """, labels="[unit]"))
    ws.config(suite(BINARY, "- names: [TestBinaryUfuncs::test_contig_vs_every_other]",
                    labels="[]", glob="supported_dtypes: [{name: float32}]\nsupported_ops: [add]"),
              name="configs/binary.yaml")
    out = ws.ootci("run", "--config", "ootci.yaml", "--labels", "unit,trunk")
    assert f"test/{BINARY} has no labels" in out.stderr
    manifest = json.loads(next((ws.path / ".ootci" / "runs").glob("*/manifest.json")).read_text())
    assert [f["relpath"] for f in manifest["files"]] == [f"test/{VIEW_OPS}"]
    assert manifest["labels"] == ["unit", "trunk"]
    assert "1 results" in out.stdout  # test_reshape_view is labelled integration only


def test_only_on_restricted_tests_are_admitted(ws):
    # Before: @onlyOn("cuda") skipped the test on any other device.
    test_file = ws.write("tests/test_only_on.py", '''
        import torch
        from torch.testing._internal.common_device_type import instantiate_device_type_tests, onlyOn
        from torch.testing._internal.common_utils import TestCase, run_tests

        class TestOnly(TestCase):
            @onlyOn("cuda")
            def test_cuda_only(self, device):
                self.assertEqual(torch.ones(2, device=device).sum().item(), 2)

        instantiate_device_type_tests(TestOnly, globals())
        if __name__ == "__main__":
            run_tests()
    ''')
    ws.config("test_suite_config:\n  labels: [unit]\n  files:\n"
              f"    - path: {test_file}\n      tests:\n        - names: [test_cuda_only]\n")
    run = ws.pytest(str(test_file))
    assert run.outcomes == {"TestOnlyPRIVATEUSEONE::test_cuda_only_privateuseone": "PASSED"}


def test_every_file_of_spyres_current_tree_checks_and_the_tree_resolves(ws, tmp_path):
    configs = sorted(CURRENT.rglob("*.yaml"))
    assert len(configs) == 94
    check = ws.ootci("plan", "check", *map(str, configs))
    assert check.stdout.startswith("ok: 94 files")
    # Resolve needs every file the configs name; Spyre's own test files are not in this checkout,
    # so stand-ins (empty files) are laid out at those paths.
    torch_stub, device_stub = tmp_path / "torch", tmp_path / "device"
    for config in configs:
        for token, root in (("${TORCH_ROOT}", torch_stub), ("${TORCH_DEVICE_ROOT}", device_stub)):
            for path in re.findall(re.escape(token) + r"(/\S+\.py)", config.read_text()):
                (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
                (root / path.lstrip("/")).touch()
    (ws.path / "ootci.yaml").write_text(
        "backend: {name: spyre, device_type: privateuseone}\n"
        f"upstream: {{torch_root: {torch_stub}, device_root: {device_stub}}}\n"
        f"test_configs: ['{CURRENT}/**/*.yaml']\n")
    plan = ws.plan()
    assert len(plan["files"]) > 60
    model_ops = next(f for f in plan["files"] if f["relpath"] == "tests/models/test_model_ops_v2.py")
    ops = [inc for r in model_ops["rules"] for inc in r["ops"]["include"]]
    assert len(ops) > 2000 and all("sample_inputs_func" in inc for inc in ops)
