"""Acceptance tests of the YAML adaptation layer on real upstream PyTorch 1.13.1 test files, run on
the reference privateuse1 backend (issue: reference backend and plan layer)."""
import hashlib
import json
import pathlib
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import SOURCE_DIR, torch_root

FIXTURE = pathlib.Path(__file__).resolve().parent / "fixtures" / "test_device_fixture.py"
SPYRE_CONFIGS = SOURCE_DIR / "tests" / "fixtures" / "spyre-configs"

VIEW_OPS = "test_view_ops.py"
BINARY = "test_binary_ufuncs.py"


def view_ops_config(names_by_mode, unlisted="skip", extra_tests=""):
    tests = "".join(
        f"        - names: [{', '.join(names)}]\n          mode: {mode}\n"
        for mode, names in names_by_mode.items())
    return (
        "test_suite_config:\n"
        "  labels: [trunk]\n"
        "  files:\n"
        f"    - path: ${{TORCH_ROOT}}/test/{VIEW_OPS}\n"
        f"      unlisted_test_mode: {unlisted}\n"
        "      tests:\n" + tests + extra_tests)


def binary_config(tests, supported_ops, supported_dtypes="", unlisted="skip"):
    return (
        "test_suite_config:\n"
        "  files:\n"
        f"    - path: ${{TORCH_ROOT}}/test/{BINARY}\n"
        f"      unlisted_test_mode: {unlisted}\n"
        "      tests:\n" + tests +
        "  global:\n" + supported_dtypes + "    supported_ops:\n" + supported_ops)


# 1. mandatory_success tests run and pass.
def test_mandatory_success_tests_run_and_pass(ws):
    ws.config(view_ops_config({"mandatory_success": [
        "TestViewOps::test_view_view", "TestViewOps::test_reshape_view",
        "TestOldViewOps::test_broadcast_to", "TestOldViewOps::test_atleast"]}))
    run = ws.pytest(VIEW_OPS)
    assert run.returncode == 0, run.output[-3000:]
    assert set(run.outcomes.values()) == {"PASSED"}
    # 1 + 1 + 11 dtypes + 10 dtypes; every unlisted test in the file is gone (unlisted: skip).
    assert len(run.outcomes) == 23
    assert all(n.split("::")[0] in ("TestViewOpsPRIVATEUSEONE", "TestOldViewOpsPRIVATEUSEONE")
               for n in run.outcomes)


# 2. An excluded dtype variant does not exist; the count drops by exactly the variants removed.
def test_excluded_dtype_variants_do_not_exist(ws):
    ws.config(view_ops_config({"mandatory_success": ["TestOldViewOps::test_broadcast_to"]}))
    before = ws.pytest(VIEW_OPS, collect_only=True).collected
    ws.config(view_ops_config({}, extra_tests=(
        "        - names: [TestOldViewOps::test_broadcast_to]\n"
        "          edits:\n"
        "            dtypes:\n"
        "              exclude: [{name: bool}, {name: int64}]\n")))
    after = ws.pytest(VIEW_OPS, collect_only=True).collected
    removed = {"TestOldViewOpsPRIVATEUSEONE::test_broadcast_to_privateuseone_bool",
               "TestOldViewOpsPRIVATEUSEONE::test_broadcast_to_privateuseone_int64"}
    assert removed <= set(before)
    assert set(before) - set(after) == removed
    assert len(before) - len(after) == 2


def test_global_dtypes_and_included_dtypes(ws):
    # supported_dtypes is the ceiling, except for dtypes a test explicitly includes.
    ws.config(view_ops_config({}, extra_tests=(
        "        - names: [TestOldViewOps::test_broadcast_to]\n"
        "          edits: {dtypes: {include: [{name: float64}]}}\n"
        "  global:\n"
        "    supported_dtypes: [{name: float32}, {name: int64}]\n")))
    names = ws.pytest(VIEW_OPS, collect_only=True).collected
    assert sorted(n.rsplit("_", 1)[-1] for n in names) == ["float32", "float64", "int64"]


def test_included_dtype_adds_a_variant_upstream_does_not_create(ws):
    # test_not_broadcastable is @ops(binary_ufuncs, allowed_dtypes=(torch.float32,)).
    ws.config(binary_config(
        "        - names: [TestBinaryUfuncs::test_not_broadcastable]\n"
        "          edits: {dtypes: {include: [{name: float64}]}}\n",
        "      - name: add\n"))
    names = ws.pytest(BINARY, collect_only=True).collected
    assert sorted(names) == [
        "TestBinaryUfuncsPRIVATEUSEONE::test_not_broadcastable_add_privateuseone_float32",
        "TestBinaryUfuncsPRIVATEUSEONE::test_not_broadcastable_add_privateuseone_float64"]


# 3. Unlisted tests follow unlisted_test_mode.
@pytest.mark.parametrize("unlisted,expected", [
    ("skip", {"test_view_view": "PASSED"}),
    ("xfail", {"test_view_view": "PASSED", "test_reshape_view": "XPASS", "test_unfold_view": "XFAIL"}),
    ("xfail_strict", {"test_view_view": "PASSED", "test_reshape_view": "FAILED",
                      "test_unfold_view": "XFAIL"}),
    ("mandatory_success", {"test_view_view": "PASSED", "test_reshape_view": "PASSED",
                           "test_unfold_view": "FAILED"}),
])
def test_unlisted_tests_follow_unlisted_test_mode(ws, unlisted, expected):
    ws.config(view_ops_config({"mandatory_success": ["TestViewOps::test_view_view"]}, unlisted=unlisted))
    run = ws.pytest(VIEW_OPS, args=["-k", "test_view_view_ or test_reshape_view_privateuseone or "
                                          "test_unfold_view_"])
    got = {n.split("::")[1].replace("_privateuseone", ""): o for n, o in run.outcomes.items()}
    assert got == expected


# 4. An op switched off in the backend: XFAIL under xfail, FAILED under mandatory_success.
@pytest.mark.parametrize("mode,switched_off,expected", [
    ("mandatory_success", "", "PASSED"),
    ("mandatory_success", "add", "FAILED"),
    ("xfail", "add", "XFAIL"),
    ("xfail_strict", "add", "XFAIL"),
])
def test_switched_off_op(ws, mode, switched_off, expected):
    ws.ootci_yaml(env={"OOTCI_REF_DISABLED_OPS": switched_off})
    ws.config(binary_config(
        f"        - names: [TestBinaryUfuncs::test_reference_numerics]\n          mode: {mode}\n",
        "      - name: add\n        dtypes: [{name: float32}]\n"))
    run = ws.pytest(BINARY)
    assert run.outcomes == {
        "TestBinaryUfuncsPRIVATEUSEONE::test_reference_numerics_add_privateuseone_float32": expected}
    if expected == "FAILED":
        assert "NotImplementedError" in run.output
        assert run.returncode == 1
    else:
        assert run.returncode == 0


# 5. An xfail_strict test that passes turns the run red.
def test_xfail_strict_pass_turns_the_run_red(ws):
    ws.config(view_ops_config({"xfail_strict": ["TestViewOps::test_view_view"]}))
    run = ws.pytest(VIEW_OPS)
    assert run.outcomes == {"TestViewOpsPRIVATEUSEONE::test_view_view_privateuseone": "FAILED"}
    assert "XPASS(strict)" in run.output
    assert run.returncode == 1
    ws.config(view_ops_config({"xfail": ["TestViewOps::test_view_view"]}))
    run = ws.pytest(VIEW_OPS)
    assert run.outcomes == {"TestViewOpsPRIVATEUSEONE::test_view_view_privateuseone": "XPASS"}
    assert run.returncode == 0


# 6. A precision override changes the tolerance actually used.
@pytest.mark.parametrize("where,expected", [
    ("none", "FAILED"),
    ("op_dtype", "PASSED"),
    ("global_dtype", "PASSED"),
    ("test", "PASSED"),
])
def test_precision_override_changes_the_outcome(ws, where, expected):
    # The backend's add on float32 is off by 0.01: beyond upstream's default tolerance.
    ws.ootci_yaml(env={"OOTCI_REF_WRONG_RESULTS": "add:float32:0.01"})
    precision = "{atol: 0.05, rtol: 0}"
    op_dtype = f", precision: {precision}" if where == "op_dtype" else ""
    test_level = f"          precision: {precision}\n" if where == "test" else ""
    global_dtypes = (f"    supported_dtypes: [{{name: float32, precision: {precision}}}]\n"
                     if where == "global_dtype" else "")
    ws.config(binary_config(
        "        - names: [TestBinaryUfuncs::test_reference_numerics]\n" + test_level,
        f"      - name: add\n        dtypes: [{{name: float32{op_dtype}}}]\n", global_dtypes))
    run = ws.pytest(BINARY)
    assert run.outcomes == {
        "TestBinaryUfuncsPRIVATEUSEONE::test_reference_numerics_add_privateuseone_float32": expected}


def test_precision_override_sets_the_variants_tolerance(ws, tmp_path):
    out = tmp_path / "tolerances.jsonl"
    ws.env_overrides["OOTCI_TEST_TOLERANCE_OUT"] = str(out)
    ws.config(
        "test_suite_config:\n  files:\n"
        f"    - path: {FIXTURE}\n"
        "      tests:\n"
        "        - names: [TestTolerance::test_reports_tolerance]\n"
        "          edits: {dtypes: {include: [{name: float64, precision: {atol: 0.25, rtol: 0.125}}]}}\n")
    run = ws.pytest(str(FIXTURE))
    assert run.returncode == 0, run.output[-3000:]
    seen = {r["test"]: (r["atol"], r["rtol"]) for r in map(json.loads, out.read_text().splitlines())}
    assert seen["test_reports_tolerance_privateuseone_float64"] == (0.25, 0.125)
    # The variant without an override keeps upstream's defaults.
    assert seen["test_reports_tolerance_privateuseone_float32"] != (0.25, 0.125)


# 7. Upstream test files are byte-identical before and after a run, and nothing is added.
def tree_digest(folder: pathlib.Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def test_upstream_files_are_untouched(ws):
    before = tree_digest(torch_root() / "test")
    ws.config(view_ops_config({"mandatory_success": ["TestViewOps::test_view_view"],
                               "xfail": ["TestViewOps::test_unfold_view"],
                               "skip": ["TestOldViewOps::test_.*"]}, unlisted="xfail"))
    run = ws.pytest(VIEW_OPS, args=["-k", "view_view or unfold_view or TestOldViewOps"])
    assert run.outcomes
    assert tree_digest(torch_root() / "test") == before


# Marks: the same config drives adaptation and selection.
def test_op_and_dtype_marks_select_variants(ws):
    ws.config(binary_config(
        "        - names: [TestBinaryUfuncs::test_contig_vs_every_other]\n          tags: [smoke]\n",
        "      - name: add\n      - name: mul\n",
        "    supported_dtypes: [{name: float32}, {name: int64}]\n"))
    by_op = ws.pytest(BINARY, args=["-m", "op__add"], collect_only=True).collected
    assert sorted(by_op) == [
        "TestBinaryUfuncsPRIVATEUSEONE::test_contig_vs_every_other_add_privateuseone_float32",
        "TestBinaryUfuncsPRIVATEUSEONE::test_contig_vs_every_other_add_privateuseone_int64"]
    by_dtype = ws.pytest(BINARY, args=["-m", "dtype__int64"], collect_only=True).collected
    assert sorted(by_dtype) == [
        "TestBinaryUfuncsPRIVATEUSEONE::test_contig_vs_every_other_add_privateuseone_int64",
        "TestBinaryUfuncsPRIVATEUSEONE::test_contig_vs_every_other_mul_privateuseone_int64"]
    assert len(ws.pytest(BINARY, args=["-m", "smoke"], collect_only=True).collected) == 4


def test_supported_ops_and_op_edits(ws):
    ws.config(binary_config(
        "        - names: [TestBinaryUfuncs::test_contig_vs_every_other]\n"
        "          edits:\n"
        "            ops: {include: [{name: sub}], exclude: [{name: mul}]}\n",
        "      - add\n      - mul\n",
        "    supported_dtypes: [{name: float32}]\n"))
    names = ws.pytest(BINARY, collect_only=True).collected
    assert sorted(names) == [
        "TestBinaryUfuncsPRIVATEUSEONE::test_contig_vs_every_other_add_privateuseone_float32",
        "TestBinaryUfuncsPRIVATEUSEONE::test_contig_vs_every_other_sub_privateuseone_float32"]


def test_force_xfail_turns_mandatory_variants_into_xfail(ws):
    ws.config(binary_config(
        "        - names: [TestBinaryUfuncs::test_contig_vs_every_other]\n",
        "      - name: add\n        force_xfail: true\n      - name: mul\n",
        "    supported_dtypes: [{name: float32}]\n"))
    run = ws.pytest(BINARY)
    assert run.outcomes == {
        "TestBinaryUfuncsPRIVATEUSEONE::test_contig_vs_every_other_add_privateuseone_float32": "XPASS",
        "TestBinaryUfuncsPRIVATEUSEONE::test_contig_vs_every_other_mul_privateuseone_float32": "PASSED"}


def test_junit_properties_carry_mode_op_dtype_and_rule(ws, tmp_path):
    ws.config(binary_config(
        "        - names: [TestBinaryUfuncs::test_contig_vs_every_other]\n          mode: xfail\n",
        "      - name: add\n", "    supported_dtypes: [{name: float32}]\n"))
    xml = tmp_path / "junit.xml"
    ws.pytest(BINARY, args=[f"--junitxml={xml}"])
    case = ET.parse(xml).find(".//testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["ootci.mode"] == "xfail"
    assert props["ootci.op"] == "add"
    assert props["ootci.dtype"] == "float32"
    assert props["ootci.rule"] == f"{ws.path}/configs/suite.yaml:6:19"  # the name's position


# Classes upstream restricted with only_for=, or never instantiated per device, still run.
def test_only_for_restricted_class_is_instantiated_for_the_device(ws):
    # test_tensor_creation_ops.py: instantiate_device_type_tests(TestBufferProtocol, ..., only_for="cpu")
    ws.config(
        "test_suite_config:\n  files:\n"
        "    - path: ${TORCH_ROOT}/test/test_tensor_creation_ops.py\n"
        "      unlisted_test_mode: skip\n"
        "      tests:\n"
        "        - names: [TestBufferProtocol::test_byte_to_int]\n")
    run = ws.pytest("test_tensor_creation_ops.py")
    assert run.outcomes == {"TestBufferProtocolPRIVATEUSEONE::test_byte_to_int_privateuseone": "PASSED"}


def test_plain_and_never_instantiated_classes_follow_the_plan(ws):
    ws.config(
        "test_suite_config:\n  files:\n"
        f"    - path: {FIXTURE}\n"
        "      unlisted_test_mode: skip\n"
        "      tests:\n"
        "        - names: [TestNeverInstantiated::test_ones_on_device, TestPlain::test_plain_pass]\n"
        "        - names: [TestPlain::test_plain_fail]\n"
        "          mode: xfail\n")
    run = ws.pytest(str(FIXTURE))
    assert run.outcomes == {
        "TestNeverInstantiatedPRIVATEUSEONE::test_ones_on_device_privateuseone": "PASSED",
        "TestPlain::test_plain_pass": "PASSED",
        "TestPlain::test_plain_fail": "XFAIL",
    }


# Real Torch Spyre configs drive real upstream files.
def test_real_spyre_config_runs_upstream_indexing_tests(ws):
    ws.config((SPYRE_CONFIGS / "test_indexing.yaml").read_text(), name="configs/test_indexing.yaml")
    listed = {"NumpyTests::test_boolean_assignment_value_mismatch", "NumpyTests::test_everything_returns_views",
              "NumpyTests::test_index_no_floats", "NumpyTests::test_none_index",
              "NumpyTests::test_truncate_leading_1s", "TestIndexing::test_empty_slice",
              "TestIndexing::test_index_put_accumulate_empty", "TestIndexing::test_invalid_index",
              "TestIndexing::test_multiple_int", "TestIndexing::test_none",
              "TestIndexing::test_out_of_bound_index", "TestIndexing::test_setitem_expansion_error",
              "TestIndexing::test_single_int"}
    run = ws.pytest("test_indexing.py")
    got = {n.replace("PRIVATEUSEONE::", "::").replace("_privateuseone", "") for n in run.outcomes}
    # The config was written for a newer PyTorch: two of its tests do not exist in 1.13.1. Those
    # rules match nothing and are reported; nothing unlisted runs.
    source = (torch_root() / "test" / "test_indexing.py").read_text()
    newer_only = {name for name in ("NumpyTests::test_truncate_leading_1s",
                                    "TestIndexing::test_index_put_accumulate_empty")
                  if f"def {name.split('::')[1]}(" not in source}
    assert got == listed - newer_only
    if newer_only:
        assert f"{len(newer_only)} rules matched no test" in run.output
    else:
        assert "matched no test" not in run.output
    for name in newer_only:
        assert name in run.output
    assert set(run.outcomes.values()) <= {"PASSED", "FAILED"}


def test_every_real_spyre_config_resolves(ws):
    for config in sorted(SPYRE_CONFIGS.glob("*.yaml")):
        ws.config(config.read_text(), name=f"configs/{config.name}")
    plan = ws.plan()
    assert sorted(pathlib.Path(f["path"]).name for f in plan["files"]) == [
        "test_binary_ufuncs.py", "test_indexing.py", "test_reductions.py", "test_shape_ops.py",
        "test_torch.py", "test_unary_ufuncs.py", "test_view_ops.py"]
    collected = ws.pytest(VIEW_OPS, collect_only=True).collected
    assert collected and all("ViewOpsPRIVATEUSEONE::" in n for n in collected)


def test_python_side_never_names_a_device():
    for source in (SOURCE_DIR / "python" / "ootci_torch").glob("*.py"):
        text = source.read_text().lower()
        # Whole words: "inputs" is not a device. Upstream's PrivateUse1TestBase is an API that
        # torch_compat.py must name, not a device.
        text = text.replace("privateuse1testbase", "")
        for device in (r"privateuse\w*", "cuda", "spyre", "xpu", "npu"):
            found = re.search(rf"\b{device}\b", text)
            assert not found, f"{source.name} mentions {found.group(0)}"


def test_python_modules_import_no_circle():
    # Every import among ootci_torch's modules, at the top or inside a function: the graph has no
    # circle, so no module needs another half-imported (nor a test to patch through one).
    import ast
    package = SOURCE_DIR / "python" / "ootci_torch"
    modules = {p.stem for p in package.glob("*.py")}
    graph = {}
    for source in package.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "ootci_torch":
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ootci_torch."):
                deps.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                deps |= {a.name.split(".")[1] for a in node.names
                         if a.name.startswith("ootci_torch.")}
        graph[source.stem] = (deps & modules) - {source.stem}
    assert graph["recording_mode"] and graph["op_recorder"]  # the walk sees imports
    done, path = set(), []

    def visit(module):
        assert module not in path, " -> ".join(path[path.index(module):] + [module])
        if module in done:
            return
        path.append(module)
        for dep in sorted(graph[module]):
            visit(dep)
        path.pop()
        done.add(module)
    for module in sorted(graph):
        visit(module)


def test_reference_backend_example_is_green_on_view_ops(ws):
    # The example's own configs, as a backend would use them: every mandatory_success test passes,
    # and crashing tests are kept out of the process by their skip rules.
    ws.config_path = str(SOURCE_DIR / "examples" / "reference-backend" / "ootci.yaml")
    run = ws.pytest(VIEW_OPS)
    assert run.returncode == 0, run.output[-3000:]
    assert "FAILED" not in run.outcomes.values()
    assert list(run.outcomes.values()).count("PASSED") >= 150
