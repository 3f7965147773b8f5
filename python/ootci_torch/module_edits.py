"""Module edits of the plan (`edits.modules` of a rule, `supported_modules` of a file) applied to
an upstream test decorated with `@modules` (torch.testing._internal.common_modules), such as
test/test_modules.py's TestModule::test_forward.

- `modules.include[]` items with a `module_path` become ModuleInfos named as the item, whose
  inputs are built from its `constructor_inputs` and `forward_inputs` (one spec, or a list: one
  ModuleInput per forward call; the legacy `sample_inputs_func` means forward inputs). Their dtypes
  are the floating dtypes of those tensor specs (float32 when there are none), and floating
  tensors follow the dtype of the variant. An item without a module_path brings in the upstream
  ModuleInfo of that name.
- `supported_modules` (names, or {name, ...}; null means no filter) filters upstream's list;
  included modules are additive, as included ops are.
- `modules.exclude[]` removes modules by name.

Each generated ModuleInput carries a reference: the same module built on the CPU, given the
device module's parameters and the pristine CPU inputs, so upstream's test_forward compares the
device's outputs with the CPU's (with the plan's precision) instead of only running them.
"""
import copy
import importlib
import os
import unittest
from typing import List, Optional

import torch

from ootci_torch import model_inputs as mi
from ootci_torch import plan as _plan

FORWARD_SEED_OFFSET = 10000  # forward inputs draw from seed + 10000 (+ 1000 per extra call), as
FORWARD_CALL_STEP = 1000     # the RFC harness, so they never share draws with constructor inputs


def _common_modules():
    return importlib.import_module("torch.testing._internal.common_modules")


def _names(entries) -> set:
    out = set()
    for e in entries or []:
        name = e if isinstance(e, str) else (e or {}).get("name")
        if name:
            out.add(name)
    return out


def _aliases(module_info) -> set:
    # Upstream names its modules "nn.Linear" (formatted "nn_Linear"); configs also write the
    # import path "torch.nn.Linear". Any of them selects the module.
    name = module_info.name
    bare = name[len("torch."):] if name.startswith("torch.") else name
    return {name, module_info.formatted_name, bare, "torch." + bare}


def _forward_specs(item) -> list:
    forward = item.get("forward_inputs")
    if forward is None:
        forward = item.get("sample_inputs_func")
    if forward is None:
        return [{}]
    return list(forward) if isinstance(forward, list) else [forward]


def item_dtypes(item) -> tuple:
    """The floating dtypes of an include item's tensor specs, else (float32,)."""
    found = mi.tensor_dtypes(item.get("constructor_inputs"))
    for spec in _forward_specs(item):
        found += mi.tensor_dtypes(spec)
    floating = sorted({d for d in found if d.is_floating_point}, key=str)
    return tuple(floating) or (torch.float32,)


def _import_class(path: str, where: str):
    """(class, None), or (None, skip reason) when it needs transformers and there is none."""
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise _plan.PlanError(f"{where}: module_path {path!r} is not a dotted import path")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "transformers":
            return None, f"{where}: module {path} needs HuggingFace transformers, which is not installed"
        raise _plan.PlanError(f"{where}: cannot import {module_name}: {e}")
    if not hasattr(module, attr):
        raise _plan.PlanError(f"{where}: {module_name} has no {attr}")
    return getattr(module, attr), None


class _Unavailable(torch.nn.Module):
    """Stands in for a module class that cannot be imported; its variants are skipped."""


def _named_module_info_class():
    ModuleInfo = _common_modules().ModuleInfo

    class ConfigModuleInfo(ModuleInfo):
        """A ModuleInfo named as the config's item: several items may share a class (one per
        layer, say) and still be distinct variants."""

        @property
        def name(self):
            return self.ootci_name

        @property
        def formatted_name(self):
            return self.ootci_name.replace(".", "_")
    return ConfigModuleInfo


def _requires_grad(value, flag: bool):
    for v in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()) and v.is_leaf:
            v.requires_grad_(flag)


def _module_inputs_func(item, seed: Optional[int], where: str):
    cm = _common_modules()
    ctor_spec = item.get("constructor_inputs") or {}
    forward_specs = _forward_specs(item)

    def module_inputs_func(module_info, device, dtype, requires_grad, training, **kwargs):
        hook = _layout_hook()
        try:
            ctor = mi.build_inputs(ctor_spec, seed=seed, dtype=dtype, where=f"{where}.constructor_inputs")
            calls = []
            for i, spec in enumerate(forward_specs):
                fseed = None if seed is None else seed + FORWARD_SEED_OFFSET + i * FORWARD_CALL_STEP
                sub = f"{where}.forward_inputs" + (f"[{i}]" if len(forward_specs) > 1 else "")
                calls.append(mi.build_inputs(spec, seed=fseed, dtype=dtype, where=sub))
        except (mi.NeedsHuggingFace, mi.UnavailableDtype) as e:
            raise unittest.SkipTest(str(e))
        ctor_args, ctor_kwargs = mi.place_inputs(ctor, device, hook)
        cpu_ctor = mi.place_inputs(copy.deepcopy(ctor), "cpu")
        out = []
        for built in calls:
            args, kwargs_ = mi.place_inputs(built, device, hook)
            for v in list(args) + list(kwargs_.values()):
                _requires_grad(v, requires_grad)
            cpu_args, cpu_kwargs = mi.place_inputs(built, "cpu")
            module_input = cm.ModuleInput(constructor_input=cm.FunctionInput(*ctor_args, **ctor_kwargs),
                                          forward_input=cm.FunctionInput(*args, **kwargs_))
            # Set after construction: ModuleInput would deep-copy the (device) arguments for the
            # reference, and a custom device's storage may not support that.
            module_input.reference_fn = _cpu_reference(module_info.module_cls, cpu_ctor, cpu_args, cpu_kwargs)
            out.append(module_input)
        return out
    return module_inputs_func


def _cpu_reference(module_cls, cpu_ctor, cpu_args, cpu_kwargs):
    """reference_fn(m, *args, **kwargs): the same module on the CPU, with m's parameters and
    buffers, run on the inputs as built (the device copies are not read back)."""
    def reference(m, *args, **kwargs):
        ref = module_cls(*cpu_ctor[0], **cpu_ctor[1])
        state = m.state_dict()
        floating = next((v for v in state.values() if v.is_floating_point()), None)
        if floating is not None:
            ref = ref.to(floating.dtype)  # as test_forward's m.to(dtype)
        ref.load_state_dict({k: v.detach().cpu() for k, v in state.items()})
        ref.train(m.training)
        with torch.no_grad():
            return ref(*copy.deepcopy(cpu_args), **copy.deepcopy(cpu_kwargs))
    return reference


def _layout_hook():
    if not os.environ.get("OOTCI_PLAN"):
        return None
    return mi.find_layout_hook(_plan.current().backend.get("modules") or [])


def _seed(file_plan) -> Optional[int]:
    raw = getattr(file_plan, "raw", None) or {}
    config = (raw.get("extra") or {}).get("input_config") or raw.get("input_config") or {}
    return config.get("seed")


def module_info(item, seed: Optional[int], source: str):
    """The ModuleInfo of one modules.include item that has a module_path."""
    name = item.get("name")
    where = f"{source}: modules.include {name}"
    cls, skip = _import_class(item["module_path"], where)
    decorators = [unittest.skip(skip)] if skip else None
    info = _named_module_info_class()(cls or _Unavailable,
                                      module_inputs_func=_module_inputs_func(item, seed, where),
                                      dtypes=item_dtypes(item), decorators=decorators)
    info.ootci_name = name
    info.ootci_rule_source = source
    info.ootci_item = item
    # Upstream never reads it; backend-specific module tests do (the module's own parameters
    # laid out as production lays them out).
    info.apply_device_layout = bool(item.get("apply_device_layout"))
    return info


def _module_edits(rule) -> dict:
    raw = getattr(rule, "raw", None) or {}
    return raw.get("modules") or (raw.get("extra") or {}).get("modules") or {}


def edited_module_list(module_info_list, file_plan, rules) -> List:
    """Upstream's list filtered by supported_modules, plus the rules' includes, minus their
    excludes (rules in plan order; a later include of a name replaces an earlier one)."""
    raw = getattr(file_plan, "raw", None) or {}
    supported = raw.get("supported_modules", (raw.get("extra") or {}).get("supported_modules"))
    supported = None if supported is None else _names(supported)
    seed = _seed(file_plan)
    out = [m for m in module_info_list if supported is None or _aliases(m) & supported]
    excluded = set()
    for rule in rules:
        if rule is None:
            continue
        edits = _module_edits(rule)
        for item in edits.get("include") or []:
            name = item.get("name")
            if item.get("module_path"):
                info = module_info(item, seed, rule.source)
            else:
                info = _upstream(name, module_info_list)
                if info is None:
                    raise _plan.PlanError(f"{rule.source}: modules.include names {name!r}, which has no "
                                          "module_path and is not a ModuleInfo in module_db")
            out = [m for m in out if not (_aliases(m) & _aliases(info))] + [info]
        excluded |= _names(edits.get("exclude"))
    return [m for m in out if not (_aliases(m) & excluded)]


def _upstream(name, module_info_list):
    for m in list(module_info_list) + list(_common_modules().module_db):
        if name in _aliases(m):
            return m
    return None


def patch_modules(test, file_plan, rules) -> bool:
    """Applies the module edits to an upstream @modules test before its variants are created.
    Returns False (and changes nothing) for a test without @modules. Safe to call once per
    device class: the edits are applied to the list they produced before."""
    parametrize = getattr(test, "parametrize_fn", None)
    modules_obj = getattr(parametrize, "__self__", None)
    if not isinstance(modules_obj, _common_modules().modules):
        return False
    rules = [r for r in rules or [] if r is not None]
    has_edits = any(_module_edits(r).get("include") or _module_edits(r).get("exclude") for r in rules)
    raw = getattr(file_plan, "raw", None) or {}
    if not has_edits and raw.get("supported_modules",
                                 (raw.get("extra") or {}).get("supported_modules")) is None:
        return False
    edited = copy.copy(modules_obj)
    edited.module_info_list = edited_module_list(modules_obj.module_info_list, file_plan, rules)
    test.parametrize_fn = edited._parametrize_test
    return True
