"""Builds the inputs a test-suite config spells out for an op or a module: the RFC's
`sample_inputs_func`, `constructor_inputs` and `forward_inputs` (`{"args": [...], "kwargs": {...}}`).

Each positional argument is a mapping with one kind: `tensor` (a tensor spec), `tensor_list`,
`value` (a plain YAML value), `py` (a Python literal), or the HuggingFace-built `config`, `module`
and `cache`. `ootci plan resolve` has checked the shapes of these already (with file:line:col);
the checks here repeat the ones that matter for building, for harnesses fed JSON by hand.

Everything is built on the CPU from a seed, so a variant's inputs are the same on every run and
every machine; `place` copies them to the device afterwards. The seeds follow the RFC harness, so
a variant keeps its inputs when arguments are added after it: argument i draws from seed + i*1000,
the j-th tensor of a tensor_list from seed + i*1000 + j*7, the i-th keyword from
seed + 500000 + i*131. A seed of None draws from the test's own generator instead.

Configs are captured on some accelerator, so they carry device strings of the capture machine.
Such a string stands for "the device under test": it is built as the TEST_DEVICE marker, which
`place` turns into the CPU for the reference run and into the test device for the device run.
"""
import ast
import copy
import importlib
import importlib.util
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import torch

ARG_KINDS = ("tensor", "tensor_list", "value", "py", "config", "module", "cache")
HF_KINDS = ("config", "module", "cache")
INITS = ("rand", "randn", "randint", "full", "zeros", "ones", "arange", "eye", "xavier", "file")
TENSOR_KEYS = ("shape", "dtype", "device", "init", "init_args", "stride", "storage_offset",
               "device_layout")
INIT_ARG_KEYS = ("low", "high", "fill_value", "path", "key")
# The dtype names a config may use (docs/plan.md), with or without a "torch." prefix.
DTYPE_NAMES = ("float16", "float32", "float64", "bfloat16", "half", "int8", "int16", "int32",
               "int64", "uint8", "uint16", "uint32", "uint64", "complex32", "complex64",
               "complex128", "bool")
_RANDOM_INITS = ("rand", "randn", "randint")
_CONSTANT_INITS = ("zeros", "ones", "full")


class InputSpecError(ValueError):
    """A spec that cannot be built: the message says where and why."""


class UnavailableDtype(InputSpecError):
    """A valid dtype name this torch does not have (uint16 on torch 1.13): a limit of the torch
    under test, not a config error, so callers skip rather than fail."""


class NeedsHuggingFace(Exception):
    """A config/module/cache argument needs HuggingFace `transformers`, which is not installed.
    The message names the argument; callers turn it into a skip with that reason."""


class _TestDevice:
    """Marker for a device string of the capture machine: the device under test."""

    def __repr__(self):
        return "<test device>"


TEST_DEVICE = _TestDevice()


@dataclass
class Inputs:
    """Built positional and keyword arguments, with the spec each came from (for placement)."""
    args: List[Any] = field(default_factory=list)
    kwargs: Dict[str, Any] = field(default_factory=dict)
    arg_specs: List[Any] = field(default_factory=list)
    kwarg_specs: Dict[str, Any] = field(default_factory=dict)


class _Deferred:
    """A value that can only be built for a given device (a primed KV cache pins its buffers to
    the device of the first update). `place` builds it."""

    def __init__(self, build: Callable[[torch.device], Any], what: str):
        self.build = build
        self.what = what

    def __repr__(self):
        return f"<{self.what}, built per device>"


# ---------------------------------------------------------------------------------------------
# dtypes, devices, literals


def resolve_dtype(text, where: str = "dtype") -> torch.dtype:
    """torch.float16 for 'float16', 'torch.float16' or 'half'."""
    if isinstance(text, torch.dtype):
        return text
    if not isinstance(text, str):
        raise InputSpecError(f"{where}: expected a dtype name, got {text!r}")
    bare = text[len("torch."):] if text.startswith("torch.") else text
    if bare not in DTYPE_NAMES:
        raise InputSpecError(f"{where}: unknown dtype {text!r} (expected one of "
                             f"{', '.join(DTYPE_NAMES)}, optionally as torch.<name>)")
    dtype = getattr(torch, "float16" if bare == "half" else bare, None)
    if not isinstance(dtype, torch.dtype):
        raise UnavailableDtype(f"{where}: dtype {bare} does not exist in torch {torch.__version__}")
    return dtype


def _dtype_or_none(text) -> Optional[torch.dtype]:
    try:
        return resolve_dtype(text)
    except InputSpecError:
        return None


def _device_or_none(text: str):
    """TEST_DEVICE for a device string of the capture machine ("<type>" or "<type>:<n>"), the
    string itself for the CPU (a CPU argument means the CPU on both runs), None otherwise.
    torch.device rejects every non-device word a config passes ("ij", "tanh", "mean", ...)."""
    try:
        device = torch.device(text)
    except (RuntimeError, TypeError, ValueError):
        return None
    return text if device.type in ("cpu", "meta") else TEST_DEVICE


_PY_NAMES = {"None": None, "True": True, "False": False, "Ellipsis": Ellipsis,
             "inf": math.inf, "nan": math.nan}


def eval_py(text: str, where: str = "py"):
    """A restricted Python literal: constants, tuples, lists, unary +/-, None/Ellipsis/inf/nan and
    slice(...). Evaluated node by node, never by eval(), so a config cannot run code."""
    if not isinstance(text, str):
        raise InputSpecError(f"{where}: expected a string (a Python literal), got {text!r}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise InputSpecError(f"{where}: {text!r} is not a Python literal: {e.msg}")

    def ev(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(ev(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [ev(e) for e in node.elts]
        if isinstance(node, ast.Name) and node.id in _PY_NAMES:
            return _PY_NAMES[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v if isinstance(node.op, ast.USub) else v
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "slice" and not node.keywords and len(node.args) <= 3):
            return slice(*[ev(a) for a in node.args])
        raise InputSpecError(f"{where}: {text!r}: {ast.dump(node)[:60]} is not allowed "
                             "(only literals, tuples, lists, None, Ellipsis, inf, nan, slice(...))")
    return ev(tree.body)


def convert_value(v, literal_any: bool = False):
    """A plain value from a config. Strings may name a dtype ("torch.int64"), a device of the
    capture machine, or a tuple/list literal ("(1, 2)"); keyword strings (literal_any) may be any
    literal ("None", "3"). Anything else is kept as written."""
    if not isinstance(v, str):
        return v
    dtype = _dtype_or_none(v)
    if dtype is not None:
        return dtype
    device = _device_or_none(v)
    if device is not None:
        return device
    if literal_any or v.lstrip()[:1] in ("(", "["):
        try:
            return eval_py(v)
        except InputSpecError:
            return v  # not a literal after all ("ij", "tanh"): the op takes the string
    return v


# ---------------------------------------------------------------------------------------------
# tensors


def _ints(value, where: str, minimum: Optional[int] = 0) -> List[int]:
    if not isinstance(value, (list, tuple)):
        raise InputSpecError(f"{where}: expected a list of integers, got {value!r}")
    out = []
    for i, v in enumerate(value):
        if not isinstance(v, int) or isinstance(v, bool) or (minimum is not None and v < minimum):
            kind = "a non-negative integer" if minimum == 0 else "an integer"
            raise InputSpecError(f"{where}[{i}]: expected {kind}, got {v!r}")
        out.append(v)
    return out


def check_tensor_spec(spec, where: str = "tensor") -> None:
    """Raises InputSpecError for a spec that cannot be built (without building it)."""
    if not isinstance(spec, dict):
        raise InputSpecError(f"{where}: expected a mapping (a tensor spec), got {spec!r}")
    unknown = sorted(set(spec) - set(TENSOR_KEYS))
    if unknown:
        raise InputSpecError(f"{where}: unknown key {unknown[0]!r} (expected {', '.join(TENSOR_KEYS)})")
    for key in ("shape", "dtype"):
        if key not in spec:
            raise InputSpecError(f"{where}: missing required key {key!r}")
    shape = _ints(spec["shape"], f"{where}.shape")
    resolve_dtype(spec["dtype"], f"{where}.dtype")
    init = spec.get("init") or "rand"
    if init not in INITS:
        raise InputSpecError(f"{where}.init: unknown init {init!r} (expected one of {', '.join(INITS)})")
    ia = spec.get("init_args") or {}
    if not isinstance(ia, dict):
        raise InputSpecError(f"{where}.init_args: expected a mapping")
    unknown = sorted(set(ia) - set(INIT_ARG_KEYS))
    if unknown:
        raise InputSpecError(f"{where}.init_args: unknown key {unknown[0]!r}")
    needs = {"randint": "high", "full": "fill_value", "file": "path"}.get(init)
    if needs and ia.get(needs) is None:
        raise InputSpecError(f"{where}: init {init!r} needs init_args.{needs}")
    if init == "randint" and ia["high"] <= ia.get("low", 0):
        raise InputSpecError(f"{where}: init randint needs init_args.high > low "
                             f"(low {ia.get('low', 0)}, high {ia['high']})")
    rank_rule = {"arange": (lambda r: r == 1, "1-D"), "eye": (lambda r: r == 2, "2-D"),
                 "xavier": (lambda r: r >= 2, "2-D or larger")}.get(init)
    if rank_rule and not rank_rule[0](len(shape)):
        raise InputSpecError(f"{where}.shape: init {init!r} needs a {rank_rule[1]} shape, "
                             f"not {len(shape)} dimensions")
    if spec.get("stride") is not None:
        stride = _ints(spec["stride"], f"{where}.stride")
        if len(stride) != len(shape):
            raise InputSpecError(f"{where}.stride: has {len(stride)} entries but shape has {len(shape)}")
    offset = spec.get("storage_offset") or 0
    if not isinstance(offset, int) or offset < 0:
        raise InputSpecError(f"{where}.storage_offset: expected a non-negative integer, got {offset!r}")
    layout = spec.get("device_layout")
    if layout is not None:
        if not isinstance(layout, dict):
            raise InputSpecError(f"{where}.device_layout: expected a mapping")
        for key in ("device_size", "stride_map", "device_dtype"):
            if key not in layout:
                raise InputSpecError(f"{where}.device_layout: missing required key {key!r}")
        size = _ints(layout["device_size"], f"{where}.device_layout.device_size", None)
        smap = _ints(layout["stride_map"], f"{where}.device_layout.stride_map", None)
        if len(size) != len(smap):
            raise InputSpecError(f"{where}.device_layout: device_size has {len(size)} entries but "
                                 f"stride_map has {len(smap)}")


def spec_dtype(spec, override: Optional[torch.dtype] = None) -> torch.dtype:
    """The dtype a spec builds with. A variant's dtype (override) replaces floating dtypes only:
    integer indices and boolean masks keep theirs whatever dtype the variant runs."""
    declared = resolve_dtype(spec["dtype"])
    if override is not None and declared.is_floating_point and override.is_floating_point:
        return override
    return declared


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return list(reversed(strides))


def _fill(init, shape, dtype, ia, where):
    """A contiguous tensor of `shape` made by `init` (the seed is already set)."""
    from torch.testing import make_tensor
    try:
        if init == "rand":
            # make_tensor over [0, 1), as the RFC harness: the same draws give the same values.
            # (Integer dtypes get zeros from it, bool gets a fair coin, as there.)
            return make_tensor(tuple(shape), dtype=dtype, device="cpu", low=0.0, high=1.0)
        if init == "randn":
            return torch.randn(shape, dtype=dtype)
        if init == "randint":
            return torch.randint(ia.get("low", 0), ia["high"], shape, dtype=dtype)
        if init == "full":
            return torch.full(shape, ia["fill_value"], dtype=dtype)
        if init == "zeros":
            return torch.zeros(shape, dtype=dtype)
        if init == "ones":
            return torch.ones(shape, dtype=dtype)
        if init == "arange":
            return torch.arange(shape[0], dtype=dtype)
        if init == "eye":
            return torch.eye(shape[0], shape[1], dtype=dtype)
        if init == "xavier":
            return torch.nn.init.xavier_uniform_(torch.empty(shape, dtype=dtype))
    except (RuntimeError, TypeError, ValueError) as e:
        raise InputSpecError(f"{where}: init {init!r} cannot make a {dtype} tensor: {e}")
    raise InputSpecError(f"{where}: unknown init {init!r}")


def _device_root_path(raw: str, where: str) -> str:
    """init_args.path with ${VAR} expanded from the environment; relative paths are relative to
    $TORCH_DEVICE_ROOT (the backend's folder, which the plan sets) when set, else the cwd."""
    def sub(m):
        value = os.environ.get(m.group(1))
        if value is None:
            raise InputSpecError(f"{where}: init_args.path {raw!r} uses ${{{m.group(1)}}}, "
                                 "which is not set")
        return value
    path = re.sub(r"\$\{([^}]+)\}", sub, raw)
    if not os.path.isabs(path):
        path = os.path.join(os.environ.get("TORCH_DEVICE_ROOT") or os.getcwd(), path)
    if not os.path.exists(path):
        raise InputSpecError(f"{where}: tensor file {path} does not exist (init_args.path {raw!r})")
    return path


def _load_file(spec, where):
    ia = spec.get("init_args") or {}
    path = _device_root_path(ia["path"], where)
    key = ia.get("key")
    if path.endswith(".npy"):
        import numpy
        t = torch.from_numpy(numpy.load(path))
    elif path.endswith(".safetensors"):
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise InputSpecError(f"{where}: {path} needs the safetensors package, which is not installed")
        tensors = load_file(path)
        if key is None and len(tensors) != 1:
            raise InputSpecError(f"{where}: {path} holds {len(tensors)} tensors; set init_args.key")
        t = tensors[key] if key is not None else next(iter(tensors.values()))
    else:
        obj = torch.load(path, map_location="cpu")
        if isinstance(obj, dict):
            if key is None:
                raise InputSpecError(f"{where}: {path} holds a mapping; set init_args.key")
            if key not in obj:
                raise InputSpecError(f"{where}: {path} has no key {key!r} (it has {sorted(obj)[:10]})")
            obj = obj[key]
        if not isinstance(obj, torch.Tensor):
            raise InputSpecError(f"{where}: {path} holds a {type(obj).__name__}, not a tensor")
        t = obj
    if list(t.shape) != list(spec["shape"]):
        raise InputSpecError(f"{where}: {path} holds shape {list(t.shape)}, the spec says {spec['shape']}")
    if t.dtype != resolve_dtype(spec["dtype"]):
        raise InputSpecError(f"{where}: {path} holds {t.dtype}, the spec says {spec['dtype']}")
    return t


def build_tensor(spec, *, seed: Optional[int] = None, dtype: Optional[torch.dtype] = None,
                 where: str = "tensor") -> torch.Tensor:
    """A CPU tensor for one tensor spec. `device` is ignored (the harness places it); `dtype`
    overrides floating dtypes (see spec_dtype)."""
    check_tensor_spec(spec, where)
    shape = list(spec["shape"])
    dt = spec_dtype(spec, dtype)
    init = spec.get("init") or "rand"
    ia = spec.get("init_args") or {}
    stride = spec.get("stride")
    offset = spec.get("storage_offset") or 0
    if init == "file":
        t = _load_file(spec, where).to(dt)
        return t if stride is None and not offset else _strided_copy(t, shape, stride, offset, where)
    # The seeded draws happen on a forked generator, so they neither depend on nor disturb the
    # random state of the test around them.
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(int(seed))
        if (stride is None or list(stride) == _contiguous_strides(shape)) and not offset:
            # A spec that spells out the contiguous layout (every captured spec does) builds
            # exactly as one without a stride.
            return _fill(init, shape, dt, ia, where)
        size = offset + (sum((s - 1) * st for s, st in zip(shape, stride)) + 1
                         if all(s > 0 for s in shape) else 0)
        if init in _RANDOM_INITS or init in _CONSTANT_INITS:
            # Every element of the storage gets a value, including those the view skips over.
            return _fill(init, [size], dt, ia, where).as_strided(shape, stride, offset)
        return _strided_copy(_fill(init, shape, dt, ia, where), shape, stride, offset, where)


def _strided_copy(logical, shape, stride, offset, where):
    """`logical`'s values in a view with the given strides and offset over a fresh storage."""
    stride = list(stride) if stride is not None else _contiguous_strides(shape)
    size = offset + (sum((s - 1) * st for s, st in zip(shape, stride)) + 1
                     if all(s > 0 for s in shape) else 0)
    view = torch.zeros(size, dtype=logical.dtype).as_strided(shape, stride, offset)
    try:
        view.copy_(logical)
    except RuntimeError as e:
        raise InputSpecError(f"{where}: the values of this init cannot be laid out with stride "
                             f"{stride} (elements overlap): {e}")
    return view


# ---------------------------------------------------------------------------------------------
# HuggingFace-built arguments


def _import_attr(path: str, kind: str, where: str):
    """The class at a dotted import path. A missing `transformers` becomes NeedsHuggingFace."""
    if not isinstance(path, str) or "." not in path:
        raise InputSpecError(f"{where}: {path!r} is not a dotted import path (package.module.Class)")
    module_name, _, attr = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "transformers":
            raise NeedsHuggingFace(_hf_message(kind, where))
        raise InputSpecError(f"{where}: cannot import {module_name}: {e}")
    try:
        return getattr(module, attr)
    except AttributeError:
        raise InputSpecError(f"{where}: {module_name} has no {attr}")


def _hf_message(kind: str, where: str) -> str:
    return (f"{where} is a '{kind}' argument, built with HuggingFace transformers, "
            "which is not installed")


def _build_config(c, kind: str, where: str):
    if c.get("model_id"):
        auto = _import_attr("transformers.AutoConfig", kind, where)
        config = auto.from_pretrained(c["model_id"])
    elif c.get("config_path"):
        config = _import_attr(c["config_path"], kind, where)(**(c.get("config_kwargs") or {}))
    else:
        raise InputSpecError(f"{where}: a {kind} argument needs model_id or config_path")
    for key, value in (c.get("config_overrides") or {}).items():
        setattr(config, key, value)
    return config


def _build_module(m, seed, where: str):
    cls = _import_attr(m.get("module_path"), "module", where)
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(int(seed))  # the module's fresh weights are part of the inputs
        config_args = ([_build_config(m, "module", where)]
                       if m.get("model_id") or m.get("config_path") else [])
        return cls(*config_args, **(m.get("module_kwargs") or {}))


def _build_cache(c, seed, dtype, where: str):
    cls = _import_attr(c.get("cache_path"), "cache", where)
    if not c.get("config_path") and not c.get("model_id"):
        raise InputSpecError(f"{where}: a cache argument needs config_path or model_id")
    config = _build_config(c, "cache", where)
    key = build_tensor(c["key"], seed=seed, dtype=dtype, where=f"{where}.key")
    value = build_tensor(c["value"], seed=None if seed is None else seed + 1, dtype=dtype,
                         where=f"{where}.value")

    def build(device):
        # A lazily allocated cache pins its buffers to the device of its first update, so the
        # past key/value go to that device first.
        cache = cls(config=config, max_cache_len=c.get("max_cache_len") or key.shape[-2])
        cache.update(key.to(device), value.to(device), c["layer_idx"])
        return cache
    return _Deferred(build, f"cache {c.get('cache_path')}")


# ---------------------------------------------------------------------------------------------
# arguments


def arg_kind(arg, where: str) -> str:
    if not isinstance(arg, dict) or len(arg) != 1 or next(iter(arg)) not in ARG_KINDS:
        raise InputSpecError(f"{where}: expected a mapping with one of {', '.join(ARG_KINDS)}, "
                             f"got {arg!r}")
    return next(iter(arg))


def build_arg(arg, *, seed: Optional[int] = None, dtype: Optional[torch.dtype] = None,
              where: str = "arg", literal_any: bool = False):
    """One argument ({"tensor": ...}, {"value": ...}, ...) built on the CPU."""
    kind = arg_kind(arg, where)
    body = arg[kind]
    sub = f"{where}.{kind}"
    if kind == "tensor":
        return build_tensor(body, seed=seed, dtype=dtype, where=sub)
    if kind == "tensor_list":
        if not isinstance(body, list):
            raise InputSpecError(f"{sub}: expected a list of tensor specs")
        return [build_tensor(s, seed=None if seed is None else seed + j * 7, dtype=dtype,
                             where=f"{sub}[{j}]") for j, s in enumerate(body)]
    if kind == "value":
        return convert_value(body, literal_any)
    if kind == "py":
        return eval_py(body, sub)
    if not isinstance(body, dict):
        raise InputSpecError(f"{sub}: expected a mapping")
    if kind == "config":
        return _build_config(body, kind, where)
    if kind == "module":
        return _build_module(body, seed, where)
    return _build_cache(body, seed, dtype, where)


def _is_arg(v) -> bool:
    return isinstance(v, dict) and len(v) == 1 and next(iter(v)) in ARG_KINDS


def build_inputs(spec, *, seed: Optional[int] = None, dtype: Optional[torch.dtype] = None,
                 where: str = "inputs") -> Inputs:
    """All arguments of one inputs edit ({"args": [...], "kwargs": {...}}), on the CPU."""
    spec = spec or {}
    if not isinstance(spec, dict):
        raise InputSpecError(f"{where}: expected a mapping with args and kwargs")
    unknown = sorted(set(spec) - {"args", "kwargs"})
    if unknown:
        raise InputSpecError(f"{where}: unknown key {unknown[0]!r} (expected args, kwargs)")
    args, kwargs = spec.get("args") or [], spec.get("kwargs") or {}
    if not isinstance(args, list):
        raise InputSpecError(f"{where}.args: expected a list")
    if not isinstance(kwargs, dict):
        raise InputSpecError(f"{where}.kwargs: expected a mapping")
    out = Inputs()
    for i, arg in enumerate(args):
        out.args.append(build_arg(arg, seed=None if seed is None else seed + i * 1000, dtype=dtype,
                                  where=f"{where}.args[{i}]"))
        out.arg_specs.append(arg)
    for i, (key, v) in enumerate(kwargs.items()):
        if _is_arg(v):
            # A keyword may carry any argument kind (hidden_states as a tensor spec).
            out.kwargs[key] = build_arg(v, seed=None if seed is None else seed + 500000 + i * 131,
                                        dtype=dtype, where=f"{where}.kwargs.{key}")
            out.kwarg_specs[key] = v
        else:
            out.kwargs[key] = convert_value(v, literal_any=True)
    return out


def check_inputs(spec, where: str = "inputs") -> None:
    """Raises InputSpecError/UnavailableDtype for what build_inputs would refuse, building no
    tensor (for collection time, where building every input would cost too much)."""
    spec = spec or {}
    if not isinstance(spec, dict):
        raise InputSpecError(f"{where}: expected a mapping with args and kwargs")
    items = [(f"{where}.args[{i}]", a) for i, a in enumerate(spec.get("args") or [])]
    items += [(f"{where}.kwargs.{k}", v) for k, v in (spec.get("kwargs") or {}).items() if _is_arg(v)]
    for sub, arg in items:
        kind = arg_kind(arg, sub)
        if kind == "tensor":
            check_tensor_spec(arg[kind], f"{sub}.tensor")
        elif kind == "tensor_list":
            for j, s in enumerate(arg[kind] or []):
                check_tensor_spec(s, f"{sub}.tensor_list[{j}]")
        elif kind == "py":
            eval_py(arg[kind], f"{sub}.py")


def tensor_dtypes(spec) -> List[torch.dtype]:
    """The dtypes of every tensor spec in an inputs edit, in order (unknown ones left out)."""
    out = []
    spec = spec or {}
    values = list(spec.get("args") or []) + [v for v in (spec.get("kwargs") or {}).values() if _is_arg(v)]
    for arg in values:
        if not isinstance(arg, dict):
            continue
        specs = [arg["tensor"]] if "tensor" in arg else list(arg.get("tensor_list") or [])
        if "cache" in arg and isinstance(arg["cache"], dict):
            specs = [arg["cache"].get("key"), arg["cache"].get("value")]
        for s in specs:
            dtype = _dtype_or_none(s.get("dtype")) if isinstance(s, dict) else None
            if dtype is not None:
                out.append(dtype)
    return out


def needs_huggingface(spec, where: str = "inputs") -> Optional[str]:
    """The skip reason when an argument needs `transformers` and it is not installed, else None."""
    spec = spec or {}
    items = [(f"{where}.args[{i}]", a) for i, a in enumerate(spec.get("args") or [])]
    items += [(f"{where}.kwargs.{k}", v) for k, v in (spec.get("kwargs") or {}).items() if _is_arg(v)]
    for sub, arg in items:
        if isinstance(arg, dict) and len(arg) == 1 and next(iter(arg)) in HF_KINDS:
            body = arg[next(iter(arg))] or {}
            paths = [body.get(k) for k in ("module_path", "config_path", "cache_path")]
            if body.get("model_id") or any(isinstance(p, str) and p.split(".")[0] == "transformers"
                                           for p in paths):
                if importlib.util.find_spec("transformers") is None:
                    return _hf_message(next(iter(arg)), sub)
    return None


# ---------------------------------------------------------------------------------------------
# placement


def find_layout_hook(module_names) -> Optional[Callable]:
    """The backend's `to_device_layout(cpu_tensor, device_layout, device)`, from the first module
    of the plan's backend.modules that defines one."""
    for name in module_names or []:
        module = importlib.import_module(name)
        hook = getattr(module, "to_device_layout", None)
        if callable(hook):
            return hook
    return None


def place(value, spec, device, layout_hook: Optional[Callable] = None):
    """`value` for a run on `device`: tensors copied there (through the backend's layout hook
    when their spec has a device_layout), TEST_DEVICE replaced by the device, modules copied and
    moved, deferred values built. On the CPU the built tensors themselves are used."""
    device = torch.device(device)
    on_cpu = device.type == "cpu"
    if isinstance(value, torch.Tensor):
        if on_cpu:
            return value
        tspec = spec.get("tensor") if isinstance(spec, dict) and "tensor" in spec else spec
        layout = tspec.get("device_layout") if isinstance(tspec, dict) else None
        if layout is not None and layout_hook is not None:
            return layout_hook(value, layout, device)
        return value.to(device)
    if value is TEST_DEVICE:
        return device
    if isinstance(value, torch.nn.Module):
        return value if on_cpu else copy.deepcopy(value).to(device)
    if isinstance(value, _Deferred):
        return value.build(device)
    if isinstance(value, (list, tuple)):
        specs = spec.get("tensor_list") if isinstance(spec, dict) and "tensor_list" in spec else None
        items = [place(v, specs[i] if specs is not None and i < len(specs) else None, device,
                       layout_hook) for i, v in enumerate(value)]
        return type(value)(items) if type(value) in (list, tuple) else tuple(items)
    if isinstance(value, dict):
        return {k: place(v, None, device, layout_hook) for k, v in value.items()}
    return value


def place_inputs(inputs: Inputs, device, layout_hook: Optional[Callable] = None):
    """(args, kwargs) of built inputs for a run on `device`."""
    args = [place(v, s, device, layout_hook) for v, s in zip(inputs.args, inputs.arg_specs)]
    kwargs = {k: place(v, inputs.kwarg_specs.get(k), device, layout_hook)
              for k, v in inputs.kwargs.items()}
    return args, kwargs
