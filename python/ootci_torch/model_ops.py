"""The generic harness of model-derived op tests: every `edits.ops.include[]` item with a
`sample_inputs_func` under `<Class>::test_model_ops_db` becomes one OpInfo, and one test compares
the op on the device with the op on the CPU for the inputs the config spells out.

A backend's test file is a few lines:

    from torch.testing._internal.common_device_type import instantiate_device_type_tests
    from torch.testing._internal.common_utils import run_tests
    from ootci_torch.model_ops import model_op_tests
    TestSpyreModelOps = model_op_tests(__file__)
    instantiate_device_type_tests(TestSpyreModelOps, globals())
    if __name__ == "__main__":
        run_tests()

The OpInfos are named after the op (`torch.mul`), so the plan's op rules (ops.exclude,
supported_ops, op__ marks) name them as the config does; their formatted name adds the include's
index over the file (`torch_mul__3`), so every include is its own variant. Each carries
`ootci_rule_source`, the rule it came from, for the device base.
"""
import functools
import operator
import os
import sys
from dataclasses import dataclass
from typing import Callable, List, Optional

import torch
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.common_utils import TestCase
from torch.testing._internal.opinfo.core import OpInfo, SampleInput

from ootci_torch import model_inputs as mi
from ootci_torch import plan as _plan

DEFAULT_CLASS = "TestSpyreModelOps"  # the class name the RFC's model-op configs use
DEFAULT_METHOD = "test_model_ops_db"
DEFAULT_ATOL = 5e-3  # the RFC harness's defaults when no precision applies
DEFAULT_RTOL = 5e-3
DEFAULT_DTYPE = torch.float16  # a variant whose first argument is no tensor (RFC harness)


# ---------------------------------------------------------------------------------------------
# op names


@dataclass
class OpTarget:
    """What an op name in a config means: the callable, whether it mutates its first argument
    (then the mutated argument is compared), and an adjustment of the arguments before both runs."""
    fn: Callable
    inplace: bool = False
    prepare: Optional[Callable[[list, dict], None]] = None


class UnresolvedOp(Exception):
    pass


def _setitem(x, index, value):
    x[index] = value
    return x


def _dropout_off(args, kwargs):
    # A random mask cannot be compared across devices: dropout runs as in eval mode unless the
    # config passes `training` itself.
    if len(args) < 3:
        kwargs.setdefault("training", False)


# Names captured from Python operators. The trailing underscore of or_/and_ is the operator
# module's (`a | b` is operator.or_), not PyTorch's in-place suffix.
_PY_OPERATORS = {
    "getitem": OpTarget(operator.getitem),
    "__getitem__": OpTarget(operator.getitem),
    "setitem": OpTarget(_setitem, inplace=True),
    "__setitem__": OpTarget(_setitem, inplace=True),
    "truediv": OpTarget(operator.truediv),
    "floordiv": OpTarget(operator.floordiv),
    "invert": OpTarget(operator.invert),
    "or_": OpTarget(operator.or_),
    "and_": OpTarget(operator.and_),
    "xor": OpTarget(operator.xor),
}
# Ops a model calls as methods with unpacked sizes (x.reshape(1, -1)) as often as with a tuple:
# the Tensor method takes both.
_AS_METHOD = {"reshape", "permute"}
_PREPARE = {"torch.nn.functional.dropout": _dropout_off}


def _tensor_method(name: str) -> Optional[Callable]:
    fn = getattr(torch.Tensor, name, None)
    return fn if callable(fn) else None


def _walk(root, parts):
    obj = root
    for part in parts:
        try:
            obj = getattr(obj, part)
        except Exception:  # torch.ops namespaces raise RuntimeError for unknown operators
            return None
    return obj


def _missing(name: str) -> UnresolvedOp:
    return UnresolvedOp(f"op {name} does not exist in torch {torch.__version__}")


def resolve_op(name: str) -> OpTarget:
    """The callable a config's op name denotes (what the model's code called)."""
    target = _resolve(name)
    prepare = _PREPARE.get(name)
    return OpTarget(target.fn, target.inplace, prepare) if prepare else target


def _resolve(name: str) -> OpTarget:
    if not isinstance(name, str) or not name:
        raise UnresolvedOp(f"op name {name!r} is not a string")
    parts = name.split(".")
    last = parts[-1]
    inplace = last.endswith("_") and not last.startswith("__") and last not in _PY_OPERATORS
    if len(parts) == 1:  # a bare method name as captured ("float")
        fn = _tensor_method(last)
        if fn is None:
            raise _missing(name)
        return OpTarget(fn, inplace)
    if parts[0] in ("operator", "_operator"):
        if last in _PY_OPERATORS and len(parts) == 2:
            return _PY_OPERATORS[last]
        fn = _walk(operator, parts[1:])
        if not callable(fn):
            raise _missing(name)
        return OpTarget(fn, inplace)
    if parts[0] != "torch":
        raise UnresolvedOp(f"op {name}: only torch.*, operator.* and Tensor method names are known")
    scope = parts[1:-1]
    if scope in ([], ["Tensor"]):
        if last in _PY_OPERATORS:
            return _PY_OPERATORS[last]
        # In-place ops, dunders and sized-view ops are Tensor methods (torch.__eq__ would be the
        # module object's own comparison).
        if inplace or last.startswith("__") or last in _AS_METHOD or scope == ["Tensor"]:
            fn = _tensor_method(last)
            if fn is None:
                raise _missing(name)
            return OpTarget(fn, inplace)
    if scope[:1] == ["aten"]:  # torch.aten.view: the ATen operator
        fn = _walk(torch.ops, parts[1:])
    else:
        fn = _walk(torch, parts[1:])
    if isinstance(fn, torch.dtype) or not callable(fn):
        fn = None
    if fn is None and not scope:
        fn = _tensor_method(last)  # torch.float, torch.to, torch.repeat: Tensor methods
    if fn is None and scope == ["nn"]:
        fn = _walk(torch.nn.functional, [last])  # torch.nn.gelu: the functional
    if not callable(fn):
        raise _missing(name)
    return OpTarget(fn, inplace)


# ---------------------------------------------------------------------------------------------
# the OpInfos


class ModelOpInfo(OpInfo):
    """An OpInfo for one ops.include item; `formatted_name` carries the include's index."""

    @property
    def formatted_name(self):
        return self.ootci_formatted_name


def _first_tensor_dtype(inputs) -> torch.dtype:
    args = (inputs or {}).get("args") or []
    first = args[0] if args else None
    spec = None
    if isinstance(first, dict) and isinstance(first.get("tensor"), dict):
        spec = first["tensor"]
    elif isinstance(first, dict) and isinstance(first.get("tensor_list"), list) and first["tensor_list"]:
        spec = first["tensor_list"][0]
    if isinstance(spec, dict):
        try:
            return mi.resolve_dtype(spec.get("dtype"))
        except mi.InputSpecError:
            pass  # checked and reported by the variant itself
    return DEFAULT_DTYPE


def _unavailable(*args, **kwargs):
    raise RuntimeError("this op does not exist in the torch under test")


def model_op_infos(rules, seed: Optional[int]) -> List[ModelOpInfo]:
    """One OpInfo per ops.include item with a sample_inputs_func, in rule order."""
    out = []
    idx = 0
    for rule in rules:
        for item in ((rule.raw.get("ops") or {}).get("include") or []):
            inputs = item.get("sample_inputs_func")
            if inputs is None:
                continue
            name = item["name"]
            skip = error = None
            try:
                target = resolve_op(name)
            except UnresolvedOp as e:
                target, skip = OpTarget(_unavailable), str(e)
            where = f"{rule.source}: ops.include {name} sample_inputs_func"
            try:
                mi.check_inputs(inputs, where)
            except mi.UnavailableDtype as e:
                skip = skip or str(e)
            except mi.InputSpecError as e:
                error = str(e)
            skip = skip or mi.needs_huggingface(inputs, f"{name} sample_inputs_func")
            dtype = _first_tensor_dtype(inputs)
            op = ModelOpInfo(name, op=target.fn, dtypes=_dispatch_dtypes((dtype,)),
                             sample_inputs_func=_sample_inputs_func, supports_autograd=False)
            op.ootci_formatted_name = f"{name.replace('.', '_')}__{idx}"
            op.ootci_rule_source = rule.source
            op.ootci_tags = list(item.get("tags") or [])
            op.ootci_description = item.get("description")
            op.ootci_inputs = inputs
            op.ootci_seed = seed
            op.ootci_dtype = dtype
            op.ootci_target = target
            op.ootci_skip = skip
            op.ootci_error = error
            out.append(op)
            idx += 1
    return out


def _override(op, dtype) -> Optional[torch.dtype]:
    """A variant with another floating dtype than the op's own (added by dtypes.include) runs its
    floating inputs in that dtype; otherwise the config's dtypes are used as written."""
    if isinstance(dtype, torch.dtype) and dtype != op.ootci_dtype and dtype.is_floating_point:
        return dtype
    return None


def build_sample(op, device, dtype=None):
    """The variant's inputs, built from the seed: (args, kwargs) for the device and for the CPU.
    The device copies are made first, as an in-place op then mutates the CPU inputs."""
    built = mi.build_inputs(op.ootci_inputs, seed=op.ootci_seed, dtype=_override(op, dtype),
                            where=f"{op.name} sample_inputs_func")
    hook = _layout_hook()
    on_device = mi.place_inputs(built, device, hook)
    on_cpu = mi.place_inputs(built, "cpu")
    return on_device, on_cpu


def _sample_inputs_func(op, device, dtype, requires_grad=False, **kwargs):
    # For harnesses that iterate OpInfo samples: the device sample of this include.
    (args, kw), _ = build_sample(op, device, dtype)
    yield SampleInput(args[0] if args else None, args=tuple(args[1:]), kwargs=kw)


# ---------------------------------------------------------------------------------------------
# the test


@functools.lru_cache(maxsize=1)
def _layout_hook():
    if not os.environ.get("OOTCI_PLAN"):
        return None
    return mi.find_layout_hook(_plan.current().backend.get("modules") or [])


def _flatten(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flatten(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _flatten(v)
    else:
        yield value


def _expected_device(args, kwargs, device) -> torch.device:
    """Where the op's outputs belong: on the CPU when an argument asks for it (x.to("cpu")) or
    nothing points at the device (torch.tensor(...) without a device), else on the device."""
    values = list(_flatten([args, kwargs]))
    if any(isinstance(v, (str, torch.device)) and str(v) == "cpu" for v in values):
        return torch.device("cpu")
    if any(isinstance(v, torch.Tensor) and v.device.type != "cpu" for v in values) or \
            any(isinstance(v, torch.device) and v.type != "cpu" for v in values):
        return torch.device(device)
    return torch.device("cpu")


def _to_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, (list, tuple)):
        return tuple(_to_cpu(v) for v in value)  # return_types and lists compare as tuples
    return value


def run_variant(tc: TestCase, device, dtype, op) -> None:
    """Runs one include on the CPU and on the device and compares the outputs."""
    if op.ootci_skip:
        tc.skipTest(op.ootci_skip)
    if op.ootci_error:
        raise mi.InputSpecError(op.ootci_error)
    try:
        (dev_args, dev_kwargs), (cpu_args, cpu_kwargs) = build_sample(op, device, dtype)
    except (mi.NeedsHuggingFace, mi.UnavailableDtype) as e:
        tc.skipTest(str(e))
    target = op.ootci_target
    if target.prepare is not None:
        target.prepare(cpu_args, cpu_kwargs)
        target.prepare(dev_args, dev_kwargs)
    with torch.no_grad():
        ref = target.fn(*cpu_args, **cpu_kwargs)
        got = target.fn(*dev_args, **dev_kwargs)
    if target.inplace:
        ref, got = cpu_args[0], dev_args[0]

    expected = _expected_device(dev_args, dev_kwargs, device)
    for out in _flatten(got):
        if isinstance(out, torch.Tensor) and out.device.type != expected.type:
            raise AssertionError(f"{op.name}: output on {out.device}, expected on {expected}")

    tolerances = getattr(tc, "_ootci_tolerances", None) or {}
    atol, rtol = tolerances.get(tc._testMethodName, (None, None))
    atol = DEFAULT_ATOL if atol is None else atol
    rtol = DEFAULT_RTOL if rtol is None else rtol
    where = f"{op.name} ({op.ootci_rule_source})"
    if op.ootci_description:
        where += f"\n{op.ootci_description}"
    tc.assertEqual(_to_cpu(got), _to_cpu(ref), atol=atol, rtol=rtol,
                   msg=lambda generated: f"{generated}\n{where}")


def _class_from_rules(rules) -> Optional[str]:
    names = sorted({r.cls for r in rules if r.cls})
    if len(names) > 1:
        raise _plan.PlanError(f"the plan's rules name {', '.join(names)} for the model-op test; "
                              "pass class_name= to model_op_tests")
    return names[0] if names else None


def model_op_tests(path: str, class_name: Optional[str] = None,
                   method: str = DEFAULT_METHOD) -> type:
    """The generic test class for the file at `path`, with one OpInfo per include of the rules
    (of the plan in $OOTCI_PLAN) whose method is exactly `method`. The class is named after those
    rules' class (or `class_name`); bind it to a variable of that name, which
    instantiate_device_type_tests removes."""
    caller = sys._getframe(1).f_globals.get("__name__", __name__)
    rules = []
    seed = None
    if os.environ.get("OOTCI_PLAN"):  # without a plan (plain import), the class has no ops
        fp = _plan.current().file_for(path)
        if fp is not None:
            rules = [r for r in fp.rules if r.raw.get("method") == method]
            seed = ((fp.raw.get("extra") or {}).get("input_config") or
                    fp.raw.get("input_config") or {}).get("seed")
    name = class_name or _class_from_rules(rules) or DEFAULT_CLASS
    rules = [r for r in rules if r.cls in (None, name)]
    op_list = model_op_infos(rules, seed)

    def test(self, device, dtype, op):
        run_variant(self, device, dtype, op)
    test.__name__ = test.__qualname__ = method
    test.__module__ = caller
    return type(name, (TestCase,), {method: ops(op_list)(test), "__module__": caller,
                                    "ootci_ops": op_list})
