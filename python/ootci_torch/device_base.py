"""The device test base that PyTorch loads through TORCH_TEST_DEVICES.

PyTorch's common_device_type runs this file with its own globals (so DeviceTypeTestBase is
defined) and appends TEST_CLASS to the device test bases. The class applies the resolved plan
while upstream's instantiate_device_type_tests creates each test variant: it admits ops and
dtypes, adds included ones, removes skipped variants, marks xfails, and sets tolerances.

The device comes only from the plan; nothing here knows a device name.
"""
import copy
import functools
import importlib
import os
import sys

from ootci_torch import module_edits
from ootci_torch import plan as _plan
from ootci_torch import torch_compat

_PLAN = _plan.current()
for _module in _PLAN.backend.get("modules") or []:
    importlib.import_module(_module)


def _cdt():
    return sys.modules["torch.testing._internal.common_device_type"]


def _variant_kwargs(fn) -> dict:
    # instantiate_test stores each variant's parameters as the default of its param_kwargs argument.
    defaults = getattr(fn, "__defaults__", None) or ()
    return defaults[0] if defaults and isinstance(defaults[0], dict) else {}


def _dtype_names(kwargs) -> tuple:
    dtype = kwargs.get("dtypes", kwargs.get("dtype"))
    if dtype is None:
        return ()
    if isinstance(dtype, (tuple, list)):
        return tuple(_plan.dtype_name(d) for d in dtype)
    return (_plan.dtype_name(dtype),)


def _torch_dtypes(names):
    import torch
    out = []
    for name in names:
        dtype = getattr(torch, name, None)
        if isinstance(dtype, torch.dtype):
            out.append(dtype)
    return out


def _ops_instance(test):
    parametrize = getattr(test, "parametrize_fn", None)
    ops_obj = getattr(parametrize, "__self__", None)
    return ops_obj if isinstance(ops_obj, _cdt().ops) else None


def _with_op_dtypes(op, entry):
    """A copy of the OpInfo whose dtypes are the supported_ops entry's (the schema replaces them), with
    the entry's first precision as the OpInfo's tolerance."""
    if entry is None or entry.dtypes is None:
        return op
    op = copy.copy(op)
    op.dtypes = set(_torch_dtypes(entry.dtypes))
    for d in entry.dtypes.values():
        if d.precision is not None:
            if d.precision.atol is not None:
                op.atol = d.precision.atol
            if d.precision.rtol is not None:
                op.rtol = d.precision.rtol
            break
    return op


def _patch_op_list(test, fp, name):
    """Applies supported_ops and the rules' ops/dtypes includes to an @ops test's op list.

    As the schema says: the list keeps only supported ops, unless none of its ops is supported (then it
    stays whole, and per-variant rules decide); a supported op's dtypes replace the OpInfo's and
    widen the test's allowed dtypes. ootci's ops.include (without sample_inputs_func) adds OpInfos,
    and dtypes.include adds dtype variants."""
    ops_obj = _ops_instance(test)
    if ops_obj is None:
        return
    op_list = list(ops_obj.op_list)
    allowed = ops_obj.allowed_dtypes
    supported = fp.supported_ops
    if supported is not None:
        def entry(op):
            return supported.get(op.name) or supported.get(op.formatted_name)
        kept = [op for op in op_list if entry(op) is not None]
        if kept:
            op_list = [_with_op_dtypes(op, entry(op)) for op in kept]
            declared = {d for op in kept if entry(op).dtypes is not None
                        for d in _torch_dtypes(entry(op).dtypes)}
            if allowed is not None and declared:
                allowed = set(allowed) | declared
    extra_ops = _plan.included_ops(fp, name)
    # A test instantiated without dtypes (OpDTypes.none) takes no dtype argument.
    no_dtypes = ops_obj.opinfo_dtypes is _cdt().OpDTypes.none
    extra_dtypes = [] if no_dtypes else _torch_dtypes(_plan.included_dtypes(fp, name))
    if extra_ops:
        from torch.testing._internal.common_methods_invocations import op_db
        # Several OpInfos share a name (div's rounding-mode variants): include them all.
        by_name = {}
        for op in op_db:
            for alias in dict.fromkeys((op.name, op.formatted_name)):
                by_name.setdefault(alias, []).append(op)
        present = {(op.name, op.variant_test_name) for op in op_list}
        for op_name in extra_ops:
            if op_name not in by_name:
                raise _plan.PlanError(f"{fp.relpath}: {name}: ops.include names '{op_name}', "
                                      f"which is not an OpInfo in op_db")
            for op in by_name[op_name]:
                if (op.name, op.variant_test_name) not in present:
                    present.add((op.name, op.variant_test_name))
                    op_list.append(op)
    if op_list == list(ops_obj.op_list) and allowed is ops_obj.allowed_dtypes and not extra_dtypes:
        return
    widened = copy.copy(ops_obj)
    widened.op_list = op_list
    widened.allowed_dtypes = allowed
    ops_cls = _cdt().ops

    def parametrize_fn(test, generic_cls, device_cls):
        seen = {}
        for item in widened._parametrize_test(test, generic_cls, device_cls):
            seen.setdefault(item[2]["op"].formatted_name, set()).add(item[2].get("dtype"))
            yield item
        for op in op_list:
            missing = [d for d in extra_dtypes if d not in seen.get(op.formatted_name, ())]
            if missing:
                yield from ops_cls([op], dtypes=missing)._parametrize_test(test, generic_cls, device_cls)

    test.parametrize_fn = parametrize_fn


class _AdmittedDevice(str):
    """An @onlyOn device type that also admits the plan's device: torch 1.13's onlyOn compares
    `self.device_type != slf.device_type` when the test runs."""
    def __ne__(self, other):
        return other not in (str(self), _PLAN.device_type)

    def __eq__(self, other):
        return not self.__ne__(other)

    __hash__ = str.__hash__


def _admit_only_on(test):
    """Lets a test restricted with @onlyOn(...) run on the plan's device, as the schema's framework does: the
    onlyOn instance is found in the closures of the decorator chain."""
    only_on = _cdt().onlyOn
    fn = getattr(test, "__func__", test)
    seen = set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if isinstance(value, only_on) and not isinstance(value.device_type, _AdmittedDevice):
                value.device_type = _AdmittedDevice(value.device_type)
        fn = getattr(fn, "__wrapped__", None)


class PlanDeviceTestBase(DeviceTypeTestBase):  # noqa: F821  (defined by common_device_type)
    device_type = _PLAN.device_type
    # Filled while variants are created: variant name -> (atol, rtol).
    _ootci_tolerances: dict = {}
    _ootci_includes: tuple = ()

    @classmethod
    def get_primary_device(cls):
        # With an index, as newer PyTorch's device test base names it: tensors report
        # "<device>:0", and upstream tests compare a module's parameters with the test's device.
        return f"{cls.device_type}:0"

    @classmethod
    def get_all_devices(cls):
        # What deviceCountAtLeast tests get: every device this process was given. Under a
        # device pool (run.devices) ootci names the backend's variable in OOTCI_DEVICE_ENV and the
        # process sees its devices as indices 0..N-1, as with CUDA_VISIBLE_DEVICES.
        name = os.environ.get("OOTCI_DEVICE_ENV")
        visible = [d for d in os.environ.get(name, "").split(",") if d] if name else []
        return [f"{cls.device_type}:{i}" for i in range(max(1, len(visible)))]

    @classmethod
    def _get_dtypes(cls, test):
        dtypes = super()._get_dtypes(test)
        if dtypes is None or not cls._ootci_includes:
            return dtypes
        if any(isinstance(d, (tuple, list)) for d in dtypes):
            return dtypes  # multi-dtype variants: includes name single dtypes only
        return list(dtypes) + [d for d in _torch_dtypes(cls._ootci_includes) if d not in dtypes]

    @classmethod
    def instantiate_test(cls, name, test, *, generic_cls=None):
        module = sys.modules.get(getattr(generic_cls, "__module__", ""), None)
        fp = _PLAN.file_for(getattr(module, "__file__", None))
        if fp is None:
            # A file outside the plan runs as upstream wrote it.
            return super().instantiate_test(name, test, generic_cls=generic_cls)
        generic_name = generic_cls.__name__
        _admit_only_on(test)
        _patch_op_list(test, fp, name)
        module_edits.patch_modules(test, fp, fp.rules_for(name))
        before = set(cls.__dict__)
        cls._ootci_includes = tuple(_plan.included_dtypes(fp, name))
        try:
            super().instantiate_test(name, test, generic_cls=generic_cls)
        finally:
            cls._ootci_includes = ()
        for variant in [k for k in cls.__dict__ if k not in before and k.startswith(name)]:
            cls._apply(fp, generic_name, name, variant)

    @classmethod
    def _apply(cls, fp, generic_name, method, variant):
        fn = cls.__dict__[variant]
        kwargs = _variant_kwargs(fn)
        op = kwargs.get("op")
        op_name = getattr(op, "name", None) if op is not None else None
        aliases = (op_name, getattr(op, "formatted_name", op_name)) if op_name else ()
        decision = _plan.decide(fp, generic_name, method, variant, aliases, _dtype_names(kwargs),
                                rule_source=getattr(op, "ootci_rule_source", None),
                                op_tags=getattr(op, "ootci_tags", None))
        if not decision.keep:
            delattr(cls, variant)
            return
        if decision.precision is not None:
            cls._ootci_tolerances = dict(cls._ootci_tolerances)
            cls._ootci_tolerances[variant] = (decision.precision.atol, decision.precision.rtol)
        wrapped = _wrap(fn, decision)
        wrapped._ootci = {
            "mode": decision.mode,
            "op": op_name,
            "dtype": ",".join(_dtype_names(kwargs)) or None,
            "rule": decision.rule.source if decision.rule else None,
            "tags": (list(decision.rule.tags) if decision.rule else [])
                    + list(getattr(op, "ootci_tags", None) or []),
            # The config name the variant comes from, so evidence maps back to config entries.
            "base": f"{generic_name}::{method}",
        }
        wrapped = _mark(wrapped, decision)
        setattr(cls, variant, wrapped)

    def _apply_precision_override_for_test(self, test, param_kwargs):
        super()._apply_precision_override_for_test(test, param_kwargs)
        atol, rtol = self._ootci_tolerances.get(self._testMethodName, (None, None))
        if atol is not None:
            self.precision = atol
        if rtol is not None:
            self.rel_tol = rtol


def _wrap(fn, decision):
    if not decision.no_grad and not decision.cpu_move:
        return fn  # each variant is its own function object, so it can carry marks directly

    @functools.wraps(fn)
    def run_adapted(self, *args, **kwargs):
        import torch
        for assertion in decision.cpu_move:
            setattr(self, assertion, _on_cpu(getattr(self, assertion)))
        if decision.no_grad:
            with torch.no_grad():
                return fn(self, *args, **kwargs)
        return fn(self, *args, **kwargs)
    return run_adapted


def _on_cpu(assertion):
    import torch

    def to_cpu(x):
        if isinstance(x, torch.Tensor):
            return x.cpu()
        if isinstance(x, (list, tuple)):
            return type(x)(to_cpu(v) for v in x)
        return x

    @functools.wraps(assertion)
    def moved(*args, **kwargs):
        return assertion(*[to_cpu(a) for a in args], **{k: to_cpu(v) for k, v in kwargs.items()})
    return moved


def _mark(fn, decision):
    import pytest
    for name in dict.fromkeys(decision.marks):
        fn = getattr(pytest.mark, name)(fn)
    if decision.mode in ("xfail", "xfail_strict"):
        reason = f"ootci plan: {decision.mode}" + (f" ({decision.rule.source})" if decision.rule else "")
        fn = pytest.mark.xfail(strict=decision.mode == "xfail_strict", reason=reason)(fn)
    return fn


torch_compat.adopt_test_bases(PlanDeviceTestBase, _PLAN.device_type)
TEST_CLASS = PlanDeviceTestBase
