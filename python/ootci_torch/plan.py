"""The resolved plan (docs/plan.md) and the per-variant decisions it implies.

Pure logic: nothing here imports PyTorch's test harness, so it can be loaded from the
TORCH_TEST_DEVICES file while `common_device_type` is still being imported.
"""
import json
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

SCHEMA = "ootci.plan"
VERSION = 1
MODES = ("mandatory_success", "xfail", "xfail_strict", "skip")


class PlanError(Exception):
    pass


def dtype_name(dtype) -> str:
    """'float32' for torch.float32 (and torch.float16 for torch.half)."""
    return str(dtype).rsplit(".", 1)[-1]


def mark_name(prefix: str, name: str) -> str:
    return prefix + re.sub(r"\W", "_", name)


@dataclass
class Precision:
    atol: Optional[float] = None
    rtol: Optional[float] = None

    @staticmethod
    def parse(obj) -> Optional["Precision"]:
        if not obj:
            return None
        return Precision(obj.get("atol"), obj.get("rtol"))


@dataclass
class DtypeEntry:
    name: str
    precision: Optional[Precision]
    force_xfail: bool

    @staticmethod
    def parse(obj) -> "DtypeEntry":
        return DtypeEntry(obj["name"], Precision.parse(obj.get("precision")), bool(obj.get("force_xfail")))


def _dtype_table(entries) -> Optional[Dict[str, DtypeEntry]]:
    if entries is None:
        return None
    return {e.name: e for e in (DtypeEntry.parse(x) for x in entries)}


@dataclass
class OpEntry:
    name: str
    force_xfail: bool
    dtypes: Optional[Dict[str, DtypeEntry]]


@dataclass
class Rule:
    cls: Optional[str]
    method: re.Pattern
    mode: str
    tags: List[str]
    no_grad: bool
    precision: Optional[Precision]
    ops_include: Dict[str, List[str]]  # op name -> tags
    ops_exclude: List[str]
    dtypes_include: Dict[str, DtypeEntry]
    dtypes_exclude: List[str]
    cpu_move: List[str]
    source: str
    method_text: str = ""
    raw: dict = field(default_factory=dict)  # the rule's plan JSON, for harnesses that read more
    matched: bool = False  # set once the rule decides any test; unmatched rules are reported

    def matches(self, cls_name: str, names: Tuple[str, ...]) -> bool:
        if self.cls is not None and self.cls != cls_name:
            return False
        return any(self.method.fullmatch(n) for n in names)


@dataclass
class FilePlan:
    path: str
    relpath: str
    unlisted_test_mode: str
    supported_dtypes: Optional[Dict[str, DtypeEntry]]
    supported_ops: Optional[Dict[str, OpEntry]]
    rules: List[Rule]
    raw: dict = field(default_factory=dict)  # the file's plan JSON

    def rule_for(self, cls_name: str, *names: str) -> Optional[Rule]:
        """The last rule matching the class and any of the names (the generic method, the variant)."""
        for rule in reversed(self.rules):
            if rule.matches(cls_name, names):
                return rule
        return None


@dataclass
class Decision:
    """What the plan says about one test variant."""
    keep: bool
    mode: str
    reason: str = ""
    marks: List[str] = field(default_factory=list)
    precision: Optional[Precision] = None
    no_grad: bool = False
    cpu_move: List[str] = field(default_factory=list)
    rule: Optional[Rule] = None


def _rule(obj, where: str) -> Rule:
    try:
        method = re.compile(obj["method"])
    except re.error as e:
        raise PlanError(f"{where}: invalid regex {obj['method']!r}: {e}")
    if obj["mode"] not in MODES:
        raise PlanError(f"{where}: unknown mode {obj['mode']!r}")
    ops = obj.get("ops") or {}
    dtypes = obj.get("dtypes") or {}
    return Rule(
        cls=obj.get("class"),
        method=method,
        mode=obj["mode"],
        tags=list(obj.get("tags") or []),
        no_grad=bool(obj.get("no_grad")),
        precision=Precision.parse(obj.get("precision")),
        ops_include={o["name"]: list(o.get("tags") or []) for o in ops.get("include") or []},
        ops_exclude=list(ops.get("exclude") or []),
        dtypes_include={e.name: e for e in (DtypeEntry.parse(d) for d in dtypes.get("include") or [])},
        dtypes_exclude=list(dtypes.get("exclude") or []),
        cpu_move=list(obj.get("cpu_move") or []),
        source=obj.get("source", where),
        method_text=(obj.get("class") + "::" if obj.get("class") else "") + obj["method"],
        raw=obj,
    )


def _file(obj, where: str) -> FilePlan:
    ops = None
    if obj.get("supported_ops") is not None:
        ops = {o["name"]: OpEntry(o["name"], bool(o.get("force_xfail")), _dtype_table(o.get("dtypes")))
               for o in obj["supported_ops"]}
    mode = obj.get("unlisted_test_mode") or "skip"
    if mode not in MODES:
        raise PlanError(f"{where}: unknown unlisted_test_mode {mode!r}")
    return FilePlan(
        path=os.path.realpath(obj["path"]),
        relpath=obj.get("relpath", obj["path"]),
        unlisted_test_mode=mode,
        supported_dtypes=_dtype_table(obj.get("supported_dtypes")),
        supported_ops=ops,
        rules=[_rule(r, f"{where}.rules[{i}]") for i, r in enumerate(obj.get("rules") or [])],
        raw=obj,
    )


class Plan:
    def __init__(self, obj, source: str = "plan"):
        if obj.get("schema") != SCHEMA or obj.get("version") != VERSION:
            raise PlanError(f"{source}: not an {SCHEMA} version {VERSION} plan "
                            f"(schema={obj.get('schema')!r}, version={obj.get('version')!r})")
        self.source = source
        self.backend = obj.get("backend") or {}
        self.device_type = self.backend.get("device_type")
        if not self.device_type:
            raise PlanError(f"{source}: backend.device_type is missing")
        self.files: Dict[str, FilePlan] = {}
        for i, f in enumerate(obj.get("files") or []):
            fp = _file(f, f"{source}: files[{i}]")
            self.files[fp.path] = fp

    @staticmethod
    def load(path: str) -> "Plan":
        try:
            with open(path, encoding="utf-8") as f:
                obj = json.load(f)
        except (OSError, ValueError) as e:
            raise PlanError(f"{path}: cannot read plan: {e}")
        return Plan(obj, path)

    def file_for(self, path: Optional[str]) -> Optional[FilePlan]:
        if not path:
            return None
        return self.files.get(os.path.realpath(path))


_loaded: Optional[Plan] = None


def current() -> Plan:
    """The plan named by $OOTCI_PLAN, loaded once per process."""
    global _loaded
    if _loaded is None:
        path = os.environ.get("OOTCI_PLAN")
        if not path:
            raise PlanError("OOTCI_PLAN is not set; run the tests with the environment of "
                            "`ootci plan env --config ootci.yaml`")
        _loaded = Plan.load(path)
    return _loaded


def decide(fp: FilePlan, cls_name: str, method: str, variant: str,
           op_name, dtypes: Tuple[str, ...]) -> Decision:
    """Applies the plan to one variant: admission, mode, marks, precision (docs/plan.md)."""
    rule = fp.rule_for(cls_name, method, variant)
    if rule is not None:
        rule.matched = True
    mode = rule.mode if rule else fp.unlisted_test_mode
    marks = list(rule.tags) if rule else []

    if mode == "skip":
        return Decision(False, mode, "mode skip", rule=rule)

    # An OpInfo answers to its name ("_masked.std") and to its formatted name ("_masked_std",
    # the spelling in variant names), so a config may use either.
    aliases = (op_name,) if isinstance(op_name, str) else tuple(op_name or ())
    op = None
    if aliases:
        primary = aliases[0]
        for alias in dict.fromkeys(mark_name("op__", a) for a in aliases):
            marks.append(alias)
        if rule and any(a in rule.ops_exclude for a in aliases):
            return Decision(False, mode, f"op {primary} excluded by {rule.source}", rule=rule)
        included = next((a for a in aliases if rule is not None and a in rule.ops_include), None)
        if included is not None:
            marks.extend(rule.ops_include[included])
        if fp.supported_ops is not None:
            op = next((fp.supported_ops[a] for a in aliases if a in fp.supported_ops), None)
            if op is None and included is None:
                return Decision(False, mode, f"op {primary} not in supported_ops", rule=rule)

    force_xfail = bool(op and op.force_xfail)
    precision = None
    for name in dtypes:
        marks.append(mark_name("dtype__", name))
        inc = rule.dtypes_include.get(name) if rule else None
        if rule and name in rule.dtypes_exclude:
            return Decision(False, mode, f"dtype {name} excluded by {rule.source}", rule=rule)
        glob = fp.supported_dtypes.get(name) if fp.supported_dtypes is not None else None
        op_dt = op.dtypes.get(name) if op is not None and op.dtypes is not None else None
        if inc is None:
            if fp.supported_dtypes is not None and glob is None:
                return Decision(False, mode, f"dtype {name} not in supported_dtypes", rule=rule)
            if op is not None and op.dtypes is not None and op_dt is None:
                return Decision(False, mode, f"dtype {name} not supported for op {op.name}",
                                rule=rule)
        force_xfail |= any(e is not None and e.force_xfail for e in (inc, op_dt, glob))
        if len(dtypes) == 1:
            candidates = (inc.precision if inc else None, rule.precision if rule else None,
                          op_dt.precision if op_dt else None, glob.precision if glob else None)
            precision = next((p for p in candidates if p is not None), None)
    if len(dtypes) != 1 and rule is not None:
        precision = rule.precision

    if mode == "mandatory_success" and force_xfail:
        mode = "xfail"
    return Decision(True, mode, marks=marks, precision=precision,
                    no_grad=bool(rule and rule.no_grad), cpu_move=list(rule.cpu_move) if rule else [],
                    rule=rule)


def included_dtypes(fp: FilePlan, cls_name: str, method: str) -> List[str]:
    """dtypes a rule adds to a test beyond the ones upstream instantiates."""
    rule = fp.rule_for(cls_name, method)
    return list(rule.dtypes_include) if rule else []


def included_ops(fp: FilePlan, cls_name: str, method: str) -> List[str]:
    rule = fp.rule_for(cls_name, method)
    return list(rule.ops_include) if rule else []
