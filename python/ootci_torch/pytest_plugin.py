"""pytest plugin (loaded through PYTEST_PLUGINS) that finishes applying the plan at run time.

It is the runtime wrapper around upstream test modules, so no upstream file is edited or copied:
- device classes that upstream restricted with only_for=/except_for= are instantiated for the
  plan's device too;
- TestCase classes with device-taking tests that upstream never instantiated per device are
  instantiated for it;
- tests outside the device machinery (plain TestCase classes) follow the plan's modes and marks;
- every test in a plan file carries its mode, op, dtype and rule as JUnit properties.
"""
import inspect
import sys

import pytest

from ootci_torch import plan as _plan
from ootci_torch import torch_compat

_CDT = "torch.testing._internal.common_device_type"


def _device_type():
    return _plan.current().device_type


def _widen(instantiate):
    """Wraps instantiate_device_type_tests so only_for/except_for never drop the plan's device."""
    def instantiate_device_type_tests(generic_test_class, scope, except_for=None, only_for=None,
                                      **kwargs):
        device = _device_type()

        def as_list(x):
            return [x] if isinstance(x, str) else list(x or [])
        only, excluded = as_list(only_for), as_list(except_for)
        aliases = torch_compat.device_aliases(device)
        if only and not aliases & set(only):
            only.append(device)
            generic_test_class._ootci_injected = "only_for"
        if aliases & set(excluded):
            excluded = [d for d in excluded if d not in aliases]
            generic_test_class._ootci_injected = "except_for"
        return instantiate(generic_test_class, scope, except_for=excluded or None,
                           only_for=only or None, **kwargs)
    instantiate_device_type_tests.__wrapped__ = instantiate
    return instantiate_device_type_tests


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "ignore::pytest.PytestUnknownMarkWarning")
    config.addinivalue_line("markers", "op__NAME: the test variant exercises OpInfo NAME (ootci)")
    config.addinivalue_line("markers", "dtype__NAME: the test variant runs with dtype NAME (ootci)")
    _plan.current()  # fail early, with a clear message, on a missing or bad plan
    cdt = __import__(_CDT, fromlist=["instantiate_device_type_tests"])
    if not hasattr(cdt.instantiate_device_type_tests, "__wrapped__"):
        cdt.instantiate_device_type_tests = _widen(cdt.instantiate_device_type_tests)
    # onlyNativeDeviceTypes reads this tuple at run time; the plan's device counts as native.
    if _device_type() not in cdt.NATIVE_DEVICES:
        cdt.NATIVE_DEVICES = tuple(cdt.NATIVE_DEVICES) + (_device_type(),)


def _needs_device(cls) -> bool:
    for name, member in vars(cls).items():
        if name.startswith("test") and callable(member):
            params = inspect.signature(member).parameters
            if "device" in params or "devices" in params:
                return True
    return False


def _inject_device_classes(module):
    """Instantiates per device the TestCase classes upstream left generic although they take a device."""
    from torch.testing._internal.common_utils import TestCase
    cdt = sys.modules[_CDT]
    for name, obj in list(vars(module).items()):
        if (inspect.isclass(obj) and issubclass(obj, TestCase)
                and not issubclass(obj, cdt.DeviceTypeTestBase)
                and obj.__module__ == module.__name__ and _needs_device(obj)):
            obj._ootci_injected = "never_instantiated"
            cdt.instantiate_device_type_tests(obj, vars(module), only_for=[_device_type()])


_collected_files = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    fp = _plan.current().file_for(str(collector.path)) if isinstance(collector, pytest.Module) else None
    if fp is not None:
        _collected_files.add(fp.path)
        try:
            _inject_device_classes(collector.obj)
        except Exception:
            pass  # an import error is reported by the collection itself, with its traceback
    yield


def _plain_base(item):
    """'Class::method' (or 'method' outside a class): the name the plan decides a plain test by."""
    method = getattr(item, "originalname", None) or item.name
    return f"{item.cls.__name__}::{method}" if item.cls is not None else method


def _plain_decision(fp, item):
    cls_name = item.cls.__name__ if item.cls is not None else ""
    method = getattr(item, "originalname", None) or item.name
    return _plan.decide(fp, cls_name, method, item.name, None, ())


def pytest_collection_modifyitems(session, config, items):
    current = _plan.current()
    kept, deselected = [], []
    for item in items:
        fp = current.file_for(str(getattr(item, "path", "")))
        if fp is None:
            kept.append(item)
            continue
        info = getattr(getattr(item, "obj", None), "_ootci", None)
        if info is None:
            decision = _plain_decision(fp, item)
            if not decision.keep:
                deselected.append(item)
                continue
            for mark in dict.fromkeys(decision.marks):
                item.add_marker(getattr(pytest.mark, mark))
            if decision.mode in ("xfail", "xfail_strict"):
                item.add_marker(pytest.mark.xfail(strict=decision.mode == "xfail_strict",
                                                  reason=f"ootci plan: {decision.mode}"))
            info = {"mode": decision.mode, "op": None, "dtype": None,
                    "rule": decision.rule.source if decision.rule else None,
                    "base": _plain_base(item),
                    "tags": list(decision.rule.tags) if decision.rule else []}
        for key in ("mode", "op", "dtype", "rule", "base"):
            if info.get(key):
                item.user_properties.append((f"ootci.{key}", info[key]))
        # JUnit carries each tag as written; the mark is only its sanitised spelling.
        for tag in info.get("tags") or []:
            item.user_properties.append(("tag", tag))
        kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_terminal_summary(terminalreporter):
    """Names the rules that matched no test: typos, or tests that upstream renamed or removed."""
    current = _plan.current()
    unmatched = [r for path in sorted(_collected_files) for r in current.files[path].rules
                 if not r.matched]
    if unmatched:
        terminalreporter.write_sep("-", f"ootci plan: {len(unmatched)} rules matched no test")
        for rule in unmatched:
            terminalreporter.write_line(f"{rule.source}: {rule.method_text}")
