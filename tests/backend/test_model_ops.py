"""Model-derived op tests and module tests (ootci_torch.model_inputs, model_ops, module_edits).

Unit tests build inputs and OpInfos directly; the acceptance tests resolve real configs with
`ootci plan resolve` and run the reference backend's tests/models/test_model_ops_v2.py and
upstream's test_modules.py in an inner pytest, as test_adaptation.py does."""
import hashlib
import inspect
import json
import math
import pathlib
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest
import yaml

from conftest import BACKEND_DIR, SOURCE_DIR, torch_root

sys.path.insert(0, str(SOURCE_DIR / "python"))
sys.path.insert(0, str(SOURCE_DIR / "python" / "shims"))  # expecttest, for torch's test internals
import torch  # noqa: E402

from ootci_torch import model_inputs as mi  # noqa: E402
from ootci_torch import model_ops as mo  # noqa: E402
from ootci_torch import module_edits as me  # noqa: E402
from ootci_torch import plan as P  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
GRANITE = FIXTURES / "model_ops_granite.yaml"
MODULES = FIXTURES / "modules_linear.yaml"
MODEL_CONFIGS = SOURCE_DIR / "tests" / "fixtures" / "spyre-configs-current" / "model_ops_tests"
MODEL_TEST = BACKEND_DIR / "tests" / "models" / "test_model_ops_v2.py"
VARIANT_PREFIX = "TestSpyreModelOpsPRIVATEUSEONE::test_model_ops_db_"


def tensor(shape, dtype="torch.float32", **kw):
    return {"tensor": {"shape": shape, "dtype": dtype, "device": "cuda:0", **kw}}


# ------------------------------------------------------------------------------------------------
# model_inputs: tensor specs


def test_dtype_names():
    assert mi.resolve_dtype("float16") is torch.float16
    assert mi.resolve_dtype("torch.bfloat16") is torch.bfloat16
    assert mi.resolve_dtype("half") is torch.float16
    with pytest.raises(mi.InputSpecError, match="unknown dtype 'float8'"):
        mi.resolve_dtype("float8")
    if not hasattr(torch, "uint16"):  # torch 1.13: a valid name this torch lacks is a skip
        with pytest.raises(mi.UnavailableDtype, match="uint16 does not exist"):
            mi.resolve_dtype("torch.uint16")


@pytest.mark.parametrize("init,dtype,check", [
    ("rand", "float32", lambda t: bool(((t >= 0) & (t < 1)).all()) and t.unique().numel() > 10),
    ("randn", "float64", lambda t: bool((t < 0).any()) and abs(t.mean().item()) < 0.3),
    ("zeros", "bfloat16", lambda t: bool((t == 0).all())),
    ("ones", "int32", lambda t: bool((t == 1).all())),
])
def test_simple_inits(init, dtype, check):
    t = mi.build_tensor({"shape": [8, 16], "dtype": dtype, "init": init}, seed=1)
    assert t.shape == (8, 16) and t.dtype == getattr(torch, dtype) and t.device.type == "cpu"
    assert check(t)


def test_default_init_is_rand():
    a = mi.build_tensor({"shape": [4], "dtype": "torch.float16"}, seed=3)
    b = mi.build_tensor({"shape": [4], "dtype": "torch.float16", "init": "rand"}, seed=3)
    assert torch.equal(a, b)


def test_randint_full_arange_eye_xavier():
    t = mi.build_tensor({"shape": [200], "dtype": "torch.int64", "init": "randint",
                         "init_args": {"low": 3, "high": 7}}, seed=0)
    assert t.min().item() >= 3 and t.max().item() <= 6 and t.unique().numel() == 4
    t = mi.build_tensor({"shape": [2, 3], "dtype": "float32", "init": "randint",
                         "init_args": {"high": 5}}, seed=0)  # low defaults to 0
    assert bool((t == t.round()).all()) and t.min() >= 0 and t.max() <= 4
    t = mi.build_tensor({"shape": [2, 3], "dtype": "float16", "init": "full",
                         "init_args": {"fill_value": 2.5}})
    assert bool((t == 2.5).all()) and t.dtype == torch.float16
    assert torch.equal(mi.build_tensor({"shape": [5], "dtype": "int64", "init": "arange"}),
                       torch.arange(5))
    assert torch.equal(mi.build_tensor({"shape": [2, 3], "dtype": "float32", "init": "eye"}),
                       torch.eye(2, 3))
    t = mi.build_tensor({"shape": [30, 50], "dtype": "float32", "init": "xavier"}, seed=4)
    bound = math.sqrt(6 / (30 + 50))
    assert t.abs().max().item() <= bound and t.abs().max().item() > bound * 0.9
    assert torch.equal(t, mi.build_tensor({"shape": [30, 50], "dtype": "float32", "init": "xavier"},
                                          seed=4))  # seeded too


def test_file_init(tmp_path, monkeypatch):
    plain = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    torch.save(plain, tmp_path / "plain.pt")
    torch.save({"w": plain * 2, "b": torch.zeros(3)}, tmp_path / "dict.pt")
    spec = {"shape": [2, 3], "dtype": "float32", "init": "file", "init_args": {"path": str(tmp_path / "plain.pt")}}
    assert torch.equal(mi.build_tensor(spec), plain)
    spec["init_args"] = {"path": str(tmp_path / "dict.pt"), "key": "w"}
    assert torch.equal(mi.build_tensor(spec), plain * 2)
    # Relative paths and ${VAR}s resolve against the backend's folder.
    monkeypatch.setenv("TORCH_DEVICE_ROOT", str(tmp_path))
    spec["init_args"] = {"path": "dict.pt", "key": "w"}
    assert torch.equal(mi.build_tensor(spec), plain * 2)
    spec["init_args"] = {"path": "${TORCH_DEVICE_ROOT}/plain.pt"}
    assert torch.equal(mi.build_tensor(spec), plain)
    with pytest.raises(mi.InputSpecError, match="holds a mapping; set init_args.key"):
        mi.build_tensor({**spec, "init_args": {"path": "dict.pt"}})
    with pytest.raises(mi.InputSpecError, match="has no key 'x'"):
        mi.build_tensor({**spec, "init_args": {"path": "dict.pt", "key": "x"}})
    with pytest.raises(mi.InputSpecError, match=r"holds shape \[2, 3\], the spec says \[3, 2\]"):
        mi.build_tensor({**spec, "shape": [3, 2]})
    with pytest.raises(mi.InputSpecError, match="holds torch.float32, the spec says float16"):
        mi.build_tensor({**spec, "dtype": "float16"})
    with pytest.raises(mi.InputSpecError, match="does not exist"):
        mi.build_tensor({**spec, "init_args": {"path": "missing.pt"}})


@pytest.mark.parametrize("spec,message", [
    ({"shape": [2], "dtype": "int64", "init": "randint"}, "init 'randint' needs init_args.high"),
    ({"shape": [2], "dtype": "int64", "init": "randint", "init_args": {"low": 5, "high": 5}},
     "needs init_args.high > low"),
    ({"shape": [2], "dtype": "float32", "init": "full"}, "needs init_args.fill_value"),
    ({"shape": [2], "dtype": "float32", "init": "file"}, "needs init_args.path"),
    ({"shape": [2, 2], "dtype": "int64", "init": "arange"}, "needs a 1-D shape, not 2 dimensions"),
    ({"shape": [2], "dtype": "float32", "init": "eye"}, "needs a 2-D shape"),
    ({"shape": [4], "dtype": "float32", "init": "xavier"}, "needs a 2-D or larger shape"),
    ({"shape": [2], "dtype": "float32", "init": "uniform"}, "unknown init 'uniform'"),
    ({"shape": [2], "dtype": "float32", "colour": "red"}, "unknown key 'colour'"),
    ({"shape": [2, -1], "dtype": "float32"}, r"shape\[1\]: expected a non-negative integer"),
    ({"shape": [2, 3], "dtype": "float32", "stride": [1]}, "stride: has 1 entries but shape has 2"),
    ({"shape": [2], "dtype": "float32", "storage_offset": -1}, "storage_offset: expected a non-negative"),
    ({"dtype": "float32"}, "missing required key 'shape'"),
    ({"shape": [2], "dtype": "int64", "init": "randn"}, "init 'randn' cannot make a torch.int64 tensor"),
    ({"shape": [2], "dtype": "float32", "device_layout": {"device_size": [2, 64], "stride_map": [1],
                                                          "device_dtype": "float32"}},
     "device_size has 2 entries but stride_map has 1"),
])
def test_bad_tensor_specs_say_what_is_wrong(spec, message):
    with pytest.raises(mi.InputSpecError, match=message):
        mi.build_tensor(spec, where="args[0].tensor")


def test_stride_and_storage_offset():
    spec = {"shape": [2, 3], "dtype": "float32", "init": "rand", "stride": [1, 2], "storage_offset": 5}
    t = mi.build_tensor(spec, seed=9)
    assert t.shape == (2, 3) and t.stride() == (1, 2) and t.storage_offset() == 5
    assert t.storage().size() == 5 + 1 * 1 + 2 * 2 + 1  # just big enough for the view
    assert bool(((t >= 0) & (t < 1)).all())
    assert torch.equal(t, mi.build_tensor(spec, seed=9))
    # Deterministic inits keep their logical values in the strided view.
    t = mi.build_tensor({"shape": [2, 3], "dtype": "int64", "init": "eye",
                         "stride": [1, 2], "storage_offset": 1})
    assert t.stride() == (1, 2) and torch.equal(t, torch.eye(2, 3, dtype=torch.int64))
    t = mi.build_tensor({"shape": [4], "dtype": "int64", "init": "arange", "stride": [3], "storage_offset": 2})
    assert t.stride() == (3,) and t.storage_offset() == 2 and torch.equal(t, torch.arange(4))
    # An expanded (stride 0) view of a constant works; of distinct values it cannot exist.
    t = mi.build_tensor({"shape": [3, 4], "dtype": "float32", "init": "full",
                         "init_args": {"fill_value": 7}, "stride": [0, 1]})
    assert t.stride() == (0, 1) and bool((t == 7).all())
    with pytest.raises(mi.InputSpecError, match="elements overlap"):
        mi.build_tensor({"shape": [3, 4], "dtype": "float32", "init": "eye", "stride": [0, 1]})


def test_contiguous_stride_spelled_out_builds_as_without_one():
    plain = {"shape": [1, 41, 64], "dtype": "torch.bfloat16", "init": "rand"}
    spelled = {**plain, "stride": [2624, 64, 1], "storage_offset": 0}
    assert torch.equal(mi.build_tensor(plain, seed=5), mi.build_tensor(spelled, seed=5))


def test_seeds_are_reproducible_and_leave_the_global_generator_alone():
    spec = {"shape": [64], "dtype": "float32", "init": "randn"}
    assert torch.equal(mi.build_tensor(spec, seed=123), mi.build_tensor(spec, seed=123))
    assert not torch.equal(mi.build_tensor(spec, seed=123), mi.build_tensor(spec, seed=124))
    torch.manual_seed(1)
    expected = torch.rand(3)
    torch.manual_seed(1)
    mi.build_tensor(spec, seed=77)
    assert torch.equal(torch.rand(3), expected)
    # Without a seed the draws come from the test's own generator.
    torch.manual_seed(2)
    a = mi.build_tensor(spec)
    torch.manual_seed(2)
    assert torch.equal(a, mi.build_tensor(spec))


def test_seed_of_each_argument_follows_the_rfc_harness():
    a, b, c = ({"shape": [5], "dtype": "float32", "init": "rand"} for _ in range(3))
    built = mi.build_inputs({"args": [{"value": 1}, {"tensor": a}, {"tensor_list": [b, c]}],
                             "kwargs": {"dim": 0, "other": {"tensor": a}}}, seed=10)
    assert torch.equal(built.args[1], mi.build_tensor(a, seed=10 + 1000))
    assert torch.equal(built.args[2][0], mi.build_tensor(b, seed=10 + 2000))
    assert torch.equal(built.args[2][1], mi.build_tensor(c, seed=10 + 2000 + 7))
    assert torch.equal(built.kwargs["other"], mi.build_tensor(a, seed=10 + 500000 + 1 * 131))
    assert built.arg_specs[1] == {"tensor": a} and built.kwargs["dim"] == 0


def test_variant_dtype_overrides_floating_specs_only():
    built = mi.build_inputs({"args": [tensor([2], "torch.bfloat16"),
                                      tensor([2], "torch.int64", init="randint", init_args={"high": 3})]},
                            seed=0, dtype=torch.float16)
    assert [t.dtype for t in built.args] == [torch.float16, torch.int64]


# ------------------------------------------------------------------------------------------------
# model_inputs: values, literals, keywords


def test_value_conversions():
    built = mi.build_inputs({"args": [
        {"value": "(1, 41, -1, 128)"}, {"value": "[2, 3]"}, {"value": "torch.float32"},
        {"value": "cuda:0"}, {"value": "cuda"}, {"value": "cpu"}, {"value": "python.nn_module"},
        {"value": [1, 2]}, {"value": 2.0}, {"value": None}, {"value": False}, {"value": "None"}]})
    assert built.args == [(1, 41, -1, 128), [2, 3], torch.float32, mi.TEST_DEVICE, mi.TEST_DEVICE,
                          "cpu", "python.nn_module", [1, 2], 2.0, None, False, "None"]
    assert isinstance(built.args[8], float)


def test_keyword_conversions():
    built = mi.build_inputs({"kwargs": {
        "dtype": "torch.int64", "other_dtype": "float16", "device": "cuda:0", "to": "cpu",
        "min": "None", "size": "(1, 2)", "indexing": "ij", "approximate": "tanh", "dim": -1,
        "keepdim": True, "p": 0.5, "x": tensor([3]), "xs": {"tensor_list": [tensor([1])["tensor"]]},
        "index": {"py": "(Ellipsis, slice(None, 64, None))"}}}, seed=0)
    kw = built.kwargs
    assert kw["dtype"] is torch.int64 and kw["other_dtype"] is torch.float16
    assert kw["device"] is mi.TEST_DEVICE and kw["to"] == "cpu"
    assert kw["min"] is None and kw["size"] == (1, 2)
    assert kw["indexing"] == "ij" and kw["approximate"] == "tanh"
    assert (kw["dim"], kw["keepdim"], kw["p"]) == (-1, True, 0.5)
    assert isinstance(kw["x"], torch.Tensor) and kw["x"].shape == (3,)
    assert isinstance(kw["xs"], list) and kw["xs"][0].shape == (1,)
    assert kw["index"] == (Ellipsis, slice(None, 64, None))


@pytest.mark.parametrize("text,value", [
    ("(None, None, slice(None, None, None), None)", (None, None, slice(None), None)),
    ("(Ellipsis, slice(None, 64, None))", (Ellipsis, slice(None, 64))),
    ("(slice(-1, None, None),)", (slice(-1, None),)),
    ("-1", -1), ("[1, -2.5]", [1, -2.5]), ("inf", math.inf), ("...", Ellipsis), ("'x'", "x"),
])
def test_py_literals(text, value):
    assert mi.eval_py(text) == value


@pytest.mark.parametrize("text", ["__import__('os')", "slice(1, 2, 3, 4)", "a + 1", "x.y",
                                  "slice(stop=3)", "(1, 2", "-'a'"])
def test_py_rejects_anything_but_literals(text):
    with pytest.raises(mi.InputSpecError, match="py"):
        mi.eval_py(text, "args[1].py")


@pytest.mark.parametrize("arg,message", [
    ({"tensor": {"shape": [1], "dtype": "float32"}, "value": 1}, "expected a mapping with one of"),
    ({"scalar": 1}, "expected a mapping with one of"),
    ({"tensor_list": {"shape": [1]}}, "expected a list of tensor specs"),
])
def test_bad_arguments(arg, message):
    with pytest.raises(mi.InputSpecError, match=message):
        mi.build_inputs({"args": [arg]})


def test_bad_inputs_edit():
    with pytest.raises(mi.InputSpecError, match="unknown key 'argz'"):
        mi.build_inputs({"argz": []})
    with pytest.raises(mi.InputSpecError, match=r"inputs.args: expected a list"):
        mi.build_inputs({"args": {"tensor": {}}})


# ------------------------------------------------------------------------------------------------
# model_inputs: placement and the HuggingFace-built arguments


def test_place_moves_tensors_and_the_test_device_marker():
    spec = {"args": [tensor([2, 3]), {"value": "cuda:0"}, {"tensor_list": [tensor([1])["tensor"]]}],
            "kwargs": {"device": "cuda", "dim": 1}}
    built = mi.build_inputs(spec, seed=0)
    args, kwargs = mi.place_inputs(built, "meta")
    assert args[0].device.type == "meta" and args[1] == torch.device("meta")
    assert args[2][0].device.type == "meta" and kwargs == {"device": torch.device("meta"), "dim": 1}
    args, kwargs = mi.place_inputs(built, "cpu")
    assert args[0] is built.args[0] and args[1] == torch.device("cpu")


def test_layout_hook_gets_the_spec_layout_per_tensor():
    layout = {"device_size": [1, 3, 64], "stride_map": [192, 64, 1], "device_dtype": "float16"}
    spec = {"args": [tensor([3, 4], device_layout=layout),
                     {"tensor_list": [tensor([1])["tensor"], tensor([2], device_layout=layout)["tensor"]]},
                     tensor([5])]}
    calls = []

    def hook(t, device_layout, device):
        calls.append((tuple(t.shape), device_layout, device))
        return t.to(device)
    args, _ = mi.place_inputs(mi.build_inputs(spec, seed=0), "meta", hook)
    assert calls == [((3, 4), layout, torch.device("meta")), ((2,), layout, torch.device("meta"))]
    assert all(t.device.type == "meta" for t in (args[0], args[1][0], args[1][1], args[2]))


def test_hf_arguments_without_transformers_name_the_argument(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers fails
    for kind, body in [("config", {"config_path": "transformers.GraniteConfig"}),
                       ("config", {"model_id": "ibm-granite/granite-3.3-8b-instruct"}),
                       ("module", {"module_path": "transformers.models.granite.modeling_granite.GraniteMLP",
                                   "config_path": "transformers.GraniteConfig"}),
                       ("cache", {"cache_path": "transformers.cache_utils.StaticCache", "layer_idx": 0,
                                  "config_path": "transformers.GraniteConfig",
                                  "key": {"shape": [1], "dtype": "float32"},
                                  "value": {"shape": [1], "dtype": "float32"}})]:
        with pytest.raises(mi.NeedsHuggingFace, match=rf"args\[1\] is a '{kind}' argument, built with "
                                                      "HuggingFace transformers, which is not installed"):
            mi.build_inputs({"args": [tensor([1]), {kind: body}]}, where="inputs")


def test_module_argument_without_huggingface_builds_a_seeded_module():
    arg = {"module": {"module_path": "torch.nn.Linear", "module_kwargs": {"in_features": 4, "out_features": 2}}}
    a = mi.build_inputs({"args": [arg]}, seed=3).args[0]
    b = mi.build_inputs({"args": [arg]}, seed=3).args[0]
    assert isinstance(a, torch.nn.Linear) and torch.equal(a.weight, b.weight)
    moved, _ = mi.place_inputs(mi.build_inputs({"args": [arg]}, seed=3), "meta")
    assert moved[0].weight.device.type == "meta" and a.weight.device.type == "cpu"


STUB_TRANSFORMERS = '''
class PretrainedConfig:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

class AutoConfig:
    @staticmethod
    def from_pretrained(model_id):
        return PretrainedConfig(model_id=model_id, hidden_size=8)

class StaticCache:
    def __init__(self, config, max_cache_len):
        self.config, self.max_cache_len, self.updates = config, max_cache_len, []

    def update(self, key, value, layer_idx):
        self.updates.append((key, value, layer_idx))
'''


def test_hf_arguments_with_transformers(tmp_path, monkeypatch):
    (tmp_path / "transformers").mkdir()
    (tmp_path / "transformers" / "__init__.py").write_text(STUB_TRANSFORMERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "transformers", raising=False)
    kv = {"shape": [1, 2, 3, 4], "dtype": "float32", "init": "rand"}
    built = mi.build_inputs({"args": [
        {"config": {"config_path": "transformers.PretrainedConfig", "config_kwargs": {"hidden_size": 16},
                    "config_overrides": {"_attn_implementation": "eager"}}},
        {"config": {"model_id": "some/model"}},
        {"cache": {"cache_path": "transformers.StaticCache", "layer_idx": 1, "config_path":
                   "transformers.PretrainedConfig", "key": kv, "value": kv}}]}, seed=0)
    assert built.args[0].hidden_size == 16 and built.args[0]._attn_implementation == "eager"
    assert built.args[1].model_id == "some/model"
    args, _ = mi.place_inputs(built, "meta")
    cache = args[2]
    assert cache.max_cache_len == 3  # the past length when max_cache_len is not given
    key, value, layer = cache.updates[0]
    assert layer == 1 and key.device.type == "meta" and value.device.type == "meta"
    cpu_cache = mi.place_inputs(built, "cpu")[0][2]
    assert not torch.equal(cpu_cache.updates[0][0], cpu_cache.updates[0][1])  # seed, seed + 1


def test_needs_huggingface_reason_without_building(monkeypatch):
    monkeypatch.setattr(mi.importlib.util, "find_spec", lambda name: None)
    reason = mi.needs_huggingface({"args": [tensor([1])], "kwargs": {
        "past_key_values": {"cache": {"cache_path": "transformers.cache_utils.DynamicCache"}}}}, "torch.add")
    assert reason == ("torch.add.kwargs.past_key_values is a 'cache' argument, built with HuggingFace "
                      "transformers, which is not installed")
    assert mi.needs_huggingface({"args": [{"module": {"module_path": "torch.nn.ReLU"}}]}) is None


# ------------------------------------------------------------------------------------------------
# model_ops: op names


def _t(*values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


@pytest.mark.parametrize("name,args,kwargs,expected,inplace", [
    ("torch.mul", (_t(1, 2), 3.0), {}, _t(3, 6), False),
    ("torch.Tensor.add", (_t(1, 2), _t(1, 1)), {}, _t(2, 3), False),
    ("torch.Tensor.mul", (_t(1, 2), 2), {}, _t(2, 4), False),
    ("torch.float", (_t(1, 2, dtype=torch.int64),), {}, _t(1, 2), False),
    ("float", (_t(1, dtype=torch.int64),), {}, _t(1), False),
    ("torch.to", (_t(1, 2),), {"dtype": torch.float64}, _t(1, 2, dtype=torch.float64), False),
    ("torch.type_as", (_t(1, 2), _t(0, dtype=torch.int64)), {}, _t(1, 2, dtype=torch.int64), False),
    ("torch.getitem", (torch.arange(6).reshape(2, 3), (Ellipsis, slice(None, 2))), {},
     torch.tensor([[0, 1], [3, 4]]), False),
    ("operator.__getitem__", (torch.arange(4), slice(1, 3)), {}, torch.tensor([1, 2]), False),
    ("torch.truediv", (_t(3, 4), 2.0), {}, _t(1.5, 2), False),
    ("torch.floordiv", (_t(-7, 7), 2), {}, _t(-4, 3), False),
    ("torch.neg", (_t(1, -2),), {}, _t(-1, 2), False),
    ("torch.or_", (torch.tensor([True, False]), torch.tensor([False, False])), {},
     torch.tensor([True, False]), False),
    ("torch.repeat", (_t(1, 2), 2), {}, _t(1, 2, 1, 2), False),
    ("torch.reshape", (torch.arange(4), 2, -1), {}, torch.arange(4).reshape(2, 2), False),
    ("torch.Tensor.expand", (_t(1).reshape(1, 1), 1, 3), {}, _t(1, 1, 1).reshape(1, 3), False),
    ("torch.Tensor.view", (torch.arange(4), (1, 2, -1)), {}, torch.arange(4).view(1, 2, 2), False),
    ("torch.transpose", (torch.arange(6).reshape(1, 2, 3), 1, 2), {},
     torch.arange(6).reshape(1, 2, 3).transpose(1, 2), False),
    ("torch.nn.gelu", (_t(0),), {}, _t(0), False),
    ("torch.aten.view", (torch.arange(4), [2, 2]), {}, torch.arange(4).view(2, 2), False),
    ("torch.ops.aten.index", (torch.arange(5), [torch.tensor([4, 0])]), {}, torch.tensor([4, 0]), False),
    ("torch.__eq__", (_t(1, 2), _t(1, 3)), {}, torch.tensor([True, False]), False),
    ("torch.add_", (_t(1, 2), 1), {}, _t(2, 3), True),
    ("torch.index_copy_", (torch.zeros(3), 0, torch.tensor([2]), _t(5)), {}, _t(0, 0, 5), True),
    ("torch.Tensor.copy_", (torch.zeros(2), _t(4, 5)), {}, _t(4, 5), True),
    ("_operator.setitem", (torch.zeros(3), 1, 7.0), {}, _t(0, 7, 0), True),
])
def test_op_names_resolve_to_what_the_model_called(name, args, kwargs, expected, inplace):
    target = mo.resolve_op(name)
    assert target.inplace is inplace
    out = target.fn(*args, **kwargs)
    if inplace:
        out = args[0]  # the harness compares the mutated input
    assert out.dtype == expected.dtype and torch.equal(out, expected)


def test_dropout_runs_as_in_eval_mode_unless_the_config_says():
    target = mo.resolve_op("torch.nn.functional.dropout")
    args, kwargs = [torch.ones(100)], {"p": 0.5}
    target.prepare(args, kwargs)
    assert torch.equal(target.fn(*args, **kwargs), torch.ones(100))
    kwargs = {"p": 0.5, "training": True}
    target.prepare(args, kwargs)
    assert kwargs["training"] is True


# Names that no torch has (scaled_dot_product_attention and sym_sum were such names on 1.13 and
# exist on 2.x): an op a config names for a newer torch than the one running.
@pytest.mark.parametrize("name", ["torch.nn.functional.no_such_attention", "torch.no_such_sym_op",
                                  "torch.ops.transformers.grouped_mm_fallback", "torch.no_such_op",
                                  "torch.Tensor.no_such_method", "numpy.add", "operator.no_such"])
def test_unknown_ops_are_unresolved_with_the_name(name):
    with pytest.raises(mo.UnresolvedOp, match=name.replace(".", r"\.")):
        mo.resolve_op(name)


def test_every_op_of_the_real_model_configs_resolves_or_names_itself():
    names = set()
    for config in sorted(MODEL_CONFIGS.glob("*.yaml")):
        for f in yaml.safe_load(config.read_text())["test_suite_config"]["files"]:
            for t in f.get("tests") or []:
                names |= {o["name"] for o in ((t.get("edits") or {}).get("ops") or {}).get("include") or []}
    unresolved = set()
    for name in names:
        try:
            mo.resolve_op(name)
        except mo.UnresolvedOp as e:
            assert name in str(e)
            unresolved.add(name)
    # Only ops newer than torch 1.13 stay unresolved.
    for name in unresolved:
        assert not hasattr(torch.nn.functional, name.rsplit(".", 1)[-1])
        assert not hasattr(torch, name.rsplit(".", 1)[-1])
    assert len(names) > 50 and len(unresolved) < 5, sorted(unresolved)


# ------------------------------------------------------------------------------------------------
# model_ops: OpInfos from a plan written by hand


def hand_plan(rules, path="/x/tests/models/test_model_ops_v2.py", seed=5):
    return P.Plan({"schema": "ootci.plan", "version": 1, "backend": {"device_type": "some_device"},
                   "files": [{"path": path, "relpath": "tests/models/test_model_ops_v2.py",
                              "unlisted_test_mode": "skip", "supported_dtypes": None,
                              "supported_ops": None, "extra": {"input_config": {"seed": seed}},
                              "rules": rules}]})


def model_rule(includes, method="test_model_ops_db", cls="TestSpyreModelOps", line=3):
    return {"class": cls, "method": method, "mode": "mandatory_success", "tags": [],
            "source": f"cfg.yaml:{line}:11", "ops": {"include": includes, "exclude": []}}


def include(name, args, kwargs=None, **extra):
    return {"name": name, "tags": ["t"], "description": "where", **extra,
            "sample_inputs_func": {"args": args, "kwargs": kwargs or {}}}


def test_op_infos_from_the_rules():
    fp = hand_plan([
        model_rule([include("torch.mul", [tensor([2], "torch.bfloat16"), {"value": 2.0}]),
                    {"name": "add", "tags": []},  # a plain include: not a model op
                    include("torch.cat", [{"tensor_list": [tensor([1], "torch.float32")["tensor"]]}])]),
        model_rule([include("torch.arange", [{"value": 3}])], line=9),
        model_rule([include("torch.neg", [tensor([1])])], method="test_model_ops_.*", line=20),
    ]).file_for("/x/tests/models/test_model_ops_v2.py")
    rules = [r for r in fp.rules if r.raw["method"] == "test_model_ops_db"]
    infos = mo.model_op_infos(rules, seed=5)
    assert [(o.name, o.formatted_name) for o in infos] == [
        ("torch.mul", "torch_mul__0"), ("torch.cat", "torch_cat__1"), ("torch.arange", "torch_arange__2")]
    assert [o.dtypes for o in infos] == [{torch.bfloat16}, {torch.float32}, {torch.float16}]
    assert [o.ootci_rule_source for o in infos] == ["cfg.yaml:3:11", "cfg.yaml:3:11", "cfg.yaml:9:11"]
    assert infos[0].ootci_tags == ["t"] and infos[0].ootci_seed == 5
    assert all(o.ootci_skip is None and o.ootci_error is None for o in infos)
    sample = next(iter(infos[0].sample_inputs_func(infos[0], "meta", torch.bfloat16, False)))
    assert sample.input.device.type == "meta" and sample.args == (2.0,)


def test_op_infos_carry_skips_and_errors():
    fp = hand_plan([model_rule([
        include("torch.nn.functional.no_such_attention", [tensor([1, 2, 3, 4], "torch.bfloat16")]),
        include("torch.mul", [tensor([2], "torch.uint16"), {"value": 2}]),
        include("torch.add", [tensor([2]), {"config": {"config_path": "transformers.GraniteConfig"}}]),
        include("torch.add", [tensor([2], init="randint")]),
    ])]).file_for("/x/tests/models/test_model_ops_v2.py")
    infos = mo.model_op_infos(fp.rules, seed=None)
    assert "op torch.nn.functional.no_such_attention does not exist in torch" in infos[0].ootci_skip
    assert infos[0].dtypes == {torch.bfloat16}
    if not hasattr(torch, "uint16"):
        assert "dtype uint16 does not exist" in infos[1].ootci_skip and infos[1].dtypes == {torch.float16}
    if mi.importlib.util.find_spec("transformers") is None:
        assert "args[1] is a 'config' argument" in infos[2].ootci_skip
    assert infos[3].ootci_skip is None
    assert "cfg.yaml:3:11: ops.include torch.add sample_inputs_func.args[0].tensor: init 'randint' " \
           "needs init_args.high" in infos[3].ootci_error


def test_model_op_tests_builds_the_class_the_rules_name(tmp_path, monkeypatch):
    path = tmp_path / "test_model_ops_v2.py"
    plan = hand_plan([model_rule([include("torch.mul", [tensor([2]), {"value": 3}])], cls="TestMyOps")],
                     path=str(path))
    (tmp_path / "plan.json").write_text(json.dumps({
        "schema": "ootci.plan", "version": 1, "backend": {"device_type": "some_device"},
        "files": [plan.file_for(str(path)).raw]}))
    monkeypatch.setenv("OOTCI_PLAN", str(tmp_path / "plan.json"))
    monkeypatch.setattr(P, "_loaded", None)
    cls = mo.model_op_tests(str(path))
    assert cls.__name__ == "TestMyOps" and cls.__module__ == __name__
    assert [o.formatted_name for o in cls.ootci_ops] == ["torch_mul__0"]
    assert hasattr(cls.test_model_ops_db, "parametrize_fn")
    # Without a plan the class exists, with no ops.
    monkeypatch.delenv("OOTCI_PLAN")
    assert mo.model_op_tests(str(path)).ootci_ops == []


# ------------------------------------------------------------------------------------------------
# module_edits


def test_module_edits_list():
    from torch.testing._internal.common_modules import module_db
    upstream = [m for m in module_db if m.name in ("nn.Linear", "nn.ReLU", "nn.Embedding")]
    item = {"name": "Linear_q_proj", "module_path": "torch.nn.Linear",
            "constructor_inputs": {"args": [{"value": 4}, {"value": 2}]},
            "forward_inputs": {"args": [tensor([3, 4], "torch.bfloat16")]}}
    fp = hand_plan([{"class": "TestModule", "method": "test_forward", "mode": "mandatory_success",
                     "source": "m.yaml:4:9", "modules": {"include": [item, {"name": "torch.nn.Sigmoid"}],
                                                         "exclude": ["nn.ReLU"]}}],
                   path="/x/test/test_modules.py").file_for("/x/test/test_modules.py")
    names = [m.name for m in me.edited_module_list(upstream, fp, fp.rules)]
    assert names == ["nn.Linear", "nn.Embedding", "Linear_q_proj", "nn.Sigmoid"]
    fp.raw["supported_modules"] = ["torch.nn.Embedding", {"name": "nn.ReLU"}]
    edited = me.edited_module_list(upstream, fp, fp.rules)
    assert [m.name for m in edited] == ["nn.Embedding", "Linear_q_proj", "nn.Sigmoid"]
    info = edited[1]
    assert info.formatted_name == "Linear_q_proj" and info.module_cls is torch.nn.Linear
    assert info.dtypes == (torch.bfloat16,) and info.ootci_rule_source == "m.yaml:4:9"
    assert info.apply_device_layout is False
    fp.raw["supported_modules"] = None
    fp.rules[0].raw["modules"]["include"] = [{"name": "NoSuch"}]
    with pytest.raises(P.PlanError, match="m.yaml:4:9: modules.include names 'NoSuch'"):
        me.edited_module_list(upstream, fp, fp.rules)


def test_module_inputs_are_seeded_follow_the_dtype_and_compare_with_the_cpu():
    item = {"name": "Lin", "module_path": "torch.nn.Linear",
            "constructor_inputs": {"args": [{"value": 4}], "kwargs": {"out_features": 2}},
            "forward_inputs": [{"args": [tensor([3, 4])]}, {"args": [tensor([4], init="randn")]}]}
    info = me.module_info(item, seed=7, source="m.yaml:1:1")
    assert info.dtypes == (torch.float32,)
    inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float64, requires_grad=False,
                                     training=True)
    assert len(inputs) == 2
    assert inputs[0].constructor_input.args == (4,) and inputs[0].constructor_input.kwargs == {"out_features": 2}
    first = inputs[0].forward_input.args[0]
    assert first.dtype == torch.float64  # floating specs follow the variant's dtype
    assert torch.equal(first, mi.build_tensor(item["forward_inputs"][0]["args"][0]["tensor"],
                                              seed=7 + 10000, dtype=torch.float64))
    assert torch.equal(inputs[1].forward_input.args[0],
                       mi.build_tensor(item["forward_inputs"][1]["args"][0]["tensor"],
                                       seed=7 + 10000 + 1000, dtype=torch.float64))
    m = torch.nn.Linear(4, 2).to(torch.float64)
    ref = inputs[0].reference_fn(m, first)
    assert torch.allclose(ref, m(first))
    with torch.no_grad():
        m.weight.add_(1)  # the reference takes the module's current parameters
    assert torch.allclose(inputs[0].reference_fn(m, first), m(first))


def test_module_needing_transformers_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    info = me.module_info({"name": "GraniteMLP", "module_path":
                           "transformers.models.granite.modeling_granite.GraniteMLP"}, None, "m.yaml:2:3")
    assert info.dtypes == (torch.float32,)
    # torch 2.x's ModuleInfo.get_decorators also takes the test's param_kwargs.
    takes_params = "param_kwargs" in inspect.signature(info.get_decorators).parameters
    decorators = info.get_decorators("TestModule", "test_forward", "cpu", torch.float32,
                                     *([{}] if takes_params else []))

    def body():
        pass
    for d in decorators:
        body = d(body)
    assert body.__unittest_skip__
    assert body.__unittest_skip_why__ == ("m.yaml:2:3: modules.include GraniteMLP: module "
                                          "transformers.models.granite.modeling_granite.GraniteMLP needs "
                                          "HuggingFace transformers, which is not installed")


def test_patch_modules_edits_only_modules_tests():
    from torch.testing._internal.common_modules import module_db, modules
    from torch.testing._internal.common_device_type import ops
    fp = hand_plan([], path="/x/test/test_modules.py").file_for("/x/test/test_modules.py")
    fp.raw["supported_modules"] = ["nn.ReLU"]
    upstream = list(module_db)

    def fresh():
        def test_forward(self, device, dtype, module_info, training):
            pass
        return test_forward
    decorated = modules(module_db)(fresh())
    assert me.patch_modules(decorated, fp, [None])
    assert [m.name for m in decorated.parametrize_fn.__self__.module_info_list] == ["nn.ReLU"]
    assert me.patch_modules(decorated, fp, [None])  # once per device class: the same result
    assert [m.name for m in decorated.parametrize_fn.__self__.module_info_list] == ["nn.ReLU"]
    assert module_db == upstream  # upstream's list is untouched
    other = ops([])(lambda self, device, dtype, op: None)
    assert not me.patch_modules(other, fp, [None])
    fp.raw["supported_modules"] = None
    plain = modules(module_db)(fresh())
    empty = hand_plan([{"class": "TestModule", "method": "test_forward", "mode": "xfail", "source": "m:1:1",
                        "modules": {"include": [], "exclude": []}}]).file_for("/x/tests/models/test_model_ops_v2.py")
    assert not me.patch_modules(plain, fp, [None] + empty.rules)  # nothing to apply
    # Untouched: upstream's own list (torch 1.13 keeps module_db itself, 2.x a copy of it).
    assert plain.parametrize_fn.__self__.module_info_list == module_db


# ------------------------------------------------------------------------------------------------
# Acceptance: real configs, `ootci plan resolve`, the reference backend


def granite_includes():
    doc = yaml.safe_load(GRANITE.read_text())
    return doc["test_suite_config"]["files"][0]["tests"][0]["edits"]["ops"]["include"]


def variant_name(idx, item):
    first = item["sample_inputs_func"]["args"][0]
    spec = first.get("tensor") or (first.get("tensor_list") or [None])[0]
    dtype = spec["dtype"].replace("torch.", "") if spec else "float16"
    return f"{VARIANT_PREFIX}{item['name'].replace('.', '_')}__{idx}_privateuseone_{dtype}"


def model_ws(ws, env=None, modules=("ootci_reference_backend",), pythonpath=()):
    """An ootci.yaml whose device root is the reference backend (its tests/models/ file)."""
    lines = ["backend:", "  name: reference", "  device_type: privateuseone",
             "  python: /usr/bin/python3", f"  modules: [{', '.join(modules)}]",
             f"  pythonpath: [{', '.join([str(BACKEND_DIR), *map(str, pythonpath)])}]"]
    if env:
        lines.append("  env:")
        lines += [f"    {k}: {json.dumps(v)}" for k, v in env.items()]
    lines += ["upstream:", f"  torch_root: {torch_root()}", f"  device_root: {BACKEND_DIR}",
              "test_configs:", "  - configs/*.yaml"]
    (ws.path / "ootci.yaml").write_text("\n".join(lines) + "\n")
    return ws


def junit_outcomes(ws, *files, args=()):
    """{variant: (outcome, message)} from a JUnit report of an inner pytest run."""
    xml = ws.path / "junit.xml"
    run = ws.pytest(*files, args=[f"--junitxml={xml}", *args])
    out = {}
    for case in ET.parse(xml).iter("testcase"):
        name = f"{case.get('classname').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome, message = "PASSED", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome, message = tag.upper(), node.get("message") or ""
        out[name] = (outcome, message)
    return run, out


# (a) Real model-op includes run on the reference backend and pass.
def test_model_op_variants_run_and_pass(ws):
    model_ws(ws).config(GRANITE.read_text())
    run = ws.pytest(str(MODEL_TEST))
    assert run.returncode == 0, run.output[-3000:]
    expected = {variant_name(i, item) for i, item in enumerate(granite_includes())}
    assert set(run.outcomes) == expected
    assert set(run.outcomes.values()) == {"PASSED"}


MUL_WRONG = {"OOTCI_REF_WRONG_RESULTS": "mul:bfloat16:0.1,mul:float32:0.1"}


# (b) A backend whose mul is wrong fails exactly the mul variants.
def test_wrong_mul_fails_the_mul_variants(ws):
    model_ws(ws, env=MUL_WRONG).config(GRANITE.read_text())
    run = ws.pytest(str(MODEL_TEST))
    mul = {variant_name(i, item) for i, item in enumerate(granite_includes()) if item["name"] == "torch.mul"}
    assert len(mul) == 4
    assert set(run.names("FAILED")) == mul
    assert set(run.names("PASSED")) == set(run.outcomes) - mul
    assert "Tensor-likes are not close" in run.output and "torch.mul (" in run.output
    assert run.returncode == 1


# (c) A precision override wide enough lets them pass again.
@pytest.mark.parametrize("where", ["global_dtype", "dtypes_include"])
def test_wide_precision_lets_the_wrong_mul_pass(ws, where):
    text = GRANITE.read_text()
    if where == "global_dtype":
        text = text.replace("atol: 0.005", "atol: 0.25").replace("rtol: 0.005", "rtol: 0.25")
    else:
        text = text.replace("          edits:\n", (
            "          edits:\n"
            "            dtypes:\n"
            "              include:\n"
            "                - {name: bfloat16, precision: {atol: 0.25, rtol: 0.25}}\n"
            "                - {name: float32, precision: {atol: 0.25, rtol: 0.25}}\n"), 1)
    model_ws(ws, env=MUL_WRONG).config(text)
    run = ws.pytest(str(MODEL_TEST))
    mul = {variant_name(i, item) for i, item in enumerate(granite_includes()) if item["name"] == "torch.mul"}
    assert mul <= set(run.outcomes)
    assert set(run.outcomes.values()) == {"PASSED"}, run.names("FAILED")
    assert run.returncode == 0


UNKNOWN_AND_HF = """\
test_suite_config:
  files:
    - path: ${TORCH_DEVICE_ROOT}/tests/models/test_model_ops_v2.py
      tests:
        - names: [TestSpyreModelOps::test_model_ops_db]
          edits:
            ops:
              include:
                - name: torch.nn.functional.scaled_dot_product_attention
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [1, 2, 3, 8], dtype: torch.bfloat16, device: cuda:0, init: rand}
                      - tensor: {shape: [1, 2, 5, 8], dtype: torch.bfloat16, device: cuda:0, init: rand}
                      - tensor: {shape: [1, 2, 5, 8], dtype: torch.bfloat16, device: cuda:0, init: rand}
                    kwargs: {dropout_p: 0.0, scale: 0.0078125, is_causal: false}
                - name: torch.add
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [2], dtype: torch.float32, init: rand}
                      - config: {config_path: transformers.GraniteConfig, config_kwargs: {hidden_size: 64}}
                - name: torch.nn.functional.linear
                  sample_inputs_func:
                    args:
                      - module:
                          module_path: transformers.models.granite.modeling_granite.GraniteMLP
                          config_path: transformers.GraniteConfig
                - name: torch.mul
                  sample_inputs_func:
                    args:
                      - tensor: {shape: [2], dtype: torch.float32, init: rand}
                      - value: 2
"""


# (d) An op the running torch lacks (scaled_dot_product_attention came with torch 2.0; on 2.x it
# runs), and HuggingFace-built arguments, are skipped with the reason.
@pytest.mark.skipif(mi.importlib.util.find_spec("transformers") is not None,
                    reason="transformers is installed here")
def test_unknown_op_and_hf_arguments_skip_with_the_reason(ws):
    model_ws(ws).config(UNKNOWN_AND_HF)
    run, got = junit_outcomes(ws, str(MODEL_TEST))
    assert run.returncode == 0, run.output[-3000:]
    sdpa = got.pop("TestSpyreModelOpsPRIVATEUSEONE::test_model_ops_db_torch_nn_functional_"
                   "scaled_dot_product_attention__0_privateuseone_bfloat16")
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        assert sdpa == ("PASSED", "")
    else:
        assert sdpa[0] == "SKIPPED"
        assert "op torch.nn.functional.scaled_dot_product_attention does not exist in torch" in sdpa[1]
    config = got.pop(f"{VARIANT_PREFIX}torch_add__1_privateuseone_float32")
    assert config[0] == "SKIPPED"
    assert "args[1] is a 'config' argument, built with HuggingFace transformers, which is not installed" \
        in config[1]
    module = got.pop(f"{VARIANT_PREFIX}torch_nn_functional_linear__2_privateuseone_float16")
    assert module[0] == "SKIPPED" and "args[0] is a 'module' argument" in module[1]
    assert got == {f"{VARIANT_PREFIX}torch_mul__3_privateuseone_float32": ("PASSED", "")}


LAYOUT_HOOK = '''\
"""Test-only backend module: a to_device_layout hook that logs what it gets."""
import hashlib
import inspect
import json
import os

import torch


def to_device_layout(cpu_tensor, device_layout, device):
    data = cpu_tensor.to(torch.float64).contiguous().numpy().tobytes()
    with open(os.environ["OOTCI_LAYOUT_LOG"], "a") as log:
        log.write(json.dumps({"shape": list(cpu_tensor.shape), "dtype": str(cpu_tensor.dtype),
                              "layout": device_layout, "device": str(device),
                              "sha256": hashlib.sha256(data).hexdigest()}) + "\\n")
    return cpu_tensor.to(device)
'''

LAYOUT_CONFIG = """\
test_suite_config:
  global:
    input_config: {seed: SEED}
  files:
    - path: ${TORCH_DEVICE_ROOT}/tests/models/test_model_ops_v2.py
      tests:
        - names: [TestSpyreModelOps::test_model_ops_db]
          edits:
            ops:
              include:
                - name: torch.add
                  sample_inputs_func:
                    args:
                      - tensor:
                          shape: [4, 64]
                          stride: [64, 1]
                          storage_offset: 0
                          dtype: torch.float16
                          device: cuda:0
                          init: randn
                          device_layout: {device_size: [1, 4, 64], stride_map: [256, 64, 1], device_dtype: float16}
                      - tensor: {shape: [4, 64], dtype: torch.float16, device: cuda:0, init: rand}
                - name: torch.cat
                  sample_inputs_func:
                    args:
                      - tensor_list:
                          - {shape: [2, 3], dtype: torch.float32, init: rand}
                          - shape: [2, 3]
                            dtype: torch.float32
                            init: randint
                            init_args: {low: -5, high: 5}
                            device_layout: {device_size: [2, 64], stride_map: [64, 1], device_dtype: float32}
                    kwargs: {dim: -1}
"""


# (e) Seeded inputs are the same on every run; the backend's layout hook gets the spec's layout.
def test_seeded_inputs_are_reproducible_across_runs(ws, tmp_path):
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "layout_hook_backend.py").write_text(LAYOUT_HOOK)
    model_ws(ws, modules=("ootci_reference_backend", "layout_hook_backend"), pythonpath=[tmp_path / "hooks"])
    log = tmp_path / "layout.jsonl"
    ws.env_overrides["OOTCI_LAYOUT_LOG"] = str(log)

    def run(seed):
        log.unlink(missing_ok=True)
        ws.config(LAYOUT_CONFIG.replace("SEED", str(seed)))
        r = ws.pytest(str(MODEL_TEST))
        assert set(r.outcomes.values()) == {"PASSED"} and len(r.outcomes) == 2, r.output[-3000:]
        return [json.loads(line) for line in log.read_text().splitlines()]

    first, second, other = run(123), run(123), run(124)
    assert [(r["shape"], r["dtype"], r["layout"]) for r in first] == [
        ([4, 64], "torch.float16", {"device_size": [1, 4, 64], "stride_map": [256, 64, 1], "device_dtype": "float16"}),
        ([2, 3], "torch.float32", {"device_size": [2, 64], "stride_map": [64, 1], "device_dtype": "float32"})]
    assert all(r["device"].startswith("privateuseone") for r in first)
    assert [r["sha256"] for r in first] == [r["sha256"] for r in second]
    assert all(a["sha256"] != b["sha256"] for a, b in zip(first, other))
    # And the same values as building the spec here, in this process, with the RFC's seeds.
    spec = yaml.safe_load(LAYOUT_CONFIG.replace("SEED", "123"))
    items = spec["test_suite_config"]["files"][0]["tests"][0]["edits"]["ops"]["include"]
    built = mi.build_inputs(items[0]["sample_inputs_func"], seed=123).args[0]
    assert hashlib.sha256(built.to(torch.float64).contiguous().numpy().tobytes()).hexdigest() == first[0]["sha256"]


def test_inputs_are_the_same_in_separate_processes():
    script = textwrap.dedent(f"""
        import hashlib, sys, yaml, torch
        sys.path.insert(0, {str(SOURCE_DIR / 'python')!r})
        from ootci_torch import model_inputs as mi
        doc = yaml.safe_load(open({str(GRANITE)!r}))
        seed = doc["test_suite_config"]["global"]["input_config"]["seed"]
        h = hashlib.sha256()
        for item in doc["test_suite_config"]["files"][0]["tests"][0]["edits"]["ops"]["include"]:
            for v in mi.build_inputs(item["sample_inputs_func"], seed=seed).args:
                for t in (v if isinstance(v, list) else [v]):
                    if isinstance(t, torch.Tensor):
                        h.update(t.to(torch.float64).contiguous().numpy().tobytes())
        print(h.hexdigest())
    """)
    digests = {subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True, text=True,
                              check=True).stdout.strip() for _ in range(2)}
    assert len(digests) == 1 and len(next(iter(digests))) == 64


# (f) A module from edits.modules runs through upstream's test_forward on the device.
def test_included_linear_module_runs_on_the_device_and_passes(ws):
    model_ws(ws).config(MODULES.read_text())
    run = ws.pytest("test_modules.py")
    assert run.outcomes == {"TestModulePRIVATEUSEONE::test_forward_Linear_q_proj_privateuseone_float32": "PASSED"}, \
        run.output[-3000:]


def test_included_linear_module_compares_with_the_cpu(ws):
    # Linear without bias runs as mm on the device: a wrong mm fails the module test.
    model_ws(ws, env={"OOTCI_REF_WRONG_RESULTS": "mm:float32:0.5"}).config(MODULES.read_text())
    run = ws.pytest("test_modules.py")
    assert run.outcomes == {"TestModulePRIVATEUSEONE::test_forward_Linear_q_proj_privateuseone_float32": "FAILED"}
    assert "Tensor-likes are not close" in run.output
