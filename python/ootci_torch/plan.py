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
    """A pytest mark for any config string: every non-word character becomes "_" (so
    `model__gpt-oss-20b` is selected by `-m model__gpt_oss_20b`), and a leading digit gets "_"."""
    mark = prefix + re.sub(r"\W", "_", name)
    return "_" + mark if mark[:1].isdigit() else mark


def selected_labels() -> Tuple[str, ...]:
    """The labels a run selects ($OOTCI_LABELS, comma-separated; empty: no label filter)."""
    return tuple(x for x in (s.strip() for s in os.environ.get("OOTCI_LABELS", "").split(",")) if x)


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
    labels: List[str]
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

    exact: bool = True  # a plain identifier names one base method; else a regex over base names

    def matches(self, base: str) -> bool:
        """The schema's rule: only the base method name counts; the class part is informative."""
        return self.method.pattern == base if self.exact else bool(self.method.fullmatch(base))

    def dtype_set(self, supported: Optional[Dict[str, "DtypeEntry"]]) -> Optional[set]:
        """The dtypes this entry is for (the schema's framework, _entry_dtype_set): its dtypes.include, else the
        file's supported_dtypes, else None (any dtype)."""
        if self.dtypes_include:
            return set(self.dtypes_include)
        return set(supported) if supported is not None else None


@dataclass
class FilePlan:
    path: str
    relpath: str
    unlisted_test_mode: str
    supported_dtypes: Optional[Dict[str, DtypeEntry]]
    supported_ops: Optional[Dict[str, OpEntry]]
    rules: List[Rule]
    raw: dict = field(default_factory=dict)  # the file's plan JSON

    def rules_for(self, base: str) -> List[Rule]:
        """Every rule naming the base method: exact names first, then regexes, each in file order."""
        exact = [r for r in self.rules if r.exact and r.matches(base)]
        return exact + [r for r in self.rules if not r.exact and r.matches(base)]

    def rule_for(self, base: str, dtypes: Tuple[str, ...] = ()) -> Optional[Rule]:
        """The rule deciding one variant, as the schema's framework (_select_entry_for_variant) picks it: of the
        rules naming the base method, the first whose dtype set holds the variant's dtype, else the
        first without a dtype restriction, else the first."""
        rules = self.rules_for(base)
        if len(rules) <= 1:
            return rules[0] if rules else None
        if len(dtypes) == 1:
            for r in rules:
                dset = r.dtype_set(self.supported_dtypes)
                if dset is not None and dtypes[0] in dset:
                    return r
        for r in rules:
            if r.dtype_set(self.supported_dtypes) is None:
                return r
        return rules[0]


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
    exact = obj.get("exact", re.fullmatch(r"\w+", obj["method"]) is not None)
    try:
        method = re.compile(re.escape(obj["method"]) if exact else obj["method"])
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
        labels=list(obj.get("labels") or []),
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
        exact=bool(exact),
    )


def _file(obj, where: str) -> FilePlan:
    ops = None
    if obj.get("supported_ops") is not None:
        ops = {o["name"]: OpEntry(o["name"], bool(o.get("force_xfail")), _dtype_table(o.get("dtypes")))
               for o in obj["supported_ops"]}
    mode = obj.get("unlisted_test_mode") or "xfail"  # the schema's default
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
           op_name, dtypes: Tuple[str, ...], rule_source: Optional[str] = None,
           op_tags: Optional[List[str]] = None) -> Decision:
    """Applies the plan to one variant: admission, mode, marks, precision (docs/plan.md).

    `rule_source` names the rule a variant comes from when the variant knows it (a model-derived
    op test is built from one rule's ops.include, whose tags are `op_tags`); otherwise the rule is
    chosen as docs/plan.md says."""
    rule = None
    if rule_source is not None:
        rule = next((r for r in fp.rules if r.source == rule_source), None)
    if rule is None:
        rule = fp.rule_for(method, dtypes)
    if rule is not None:
        rule.matched = True
    mode = rule.mode if rule else fp.unlisted_test_mode
    marks = [mark_name("", t) for t in rule.tags] if rule else []
    # Every variant is marked with its suite labels: `-m testtype__unit`.
    marks += [mark_name("testtype__", label) for label in fp.raw.get("labels") or []]

    if mode == "skip":
        return Decision(False, mode, "mode skip", rule=rule)
    labels = selected_labels()
    if rule is not None and rule.labels and labels and not set(labels) & set(rule.labels):
        return Decision(False, mode, f"labels {rule.labels} not selected ({', '.join(labels)})",
                        rule=rule)

    # An OpInfo answers to its name ("_masked.std") and to its formatted name ("_masked_std",
    # the spelling in variant names), so a config may use either. Which ops a test has at all is
    # decided on its @ops list (supported_ops, ops.include), before variants exist.
    aliases = (op_name,) if isinstance(op_name, str) else tuple(op_name or ())
    op = None
    if aliases:
        primary = aliases[0]
        for alias in dict.fromkeys(mark_name("op__", a) for a in aliases):
            marks.append(alias)
        if rule and any(a in rule.ops_exclude or any(a.startswith(x + "_") for x in rule.ops_exclude)
                        for a in aliases):
            return Decision(False, mode, f"op {primary} excluded by {rule.source}", rule=rule)
        included = next((a for a in aliases if rule is not None and a in rule.ops_include), None)
        if op_tags is not None:
            marks.extend(mark_name("", t) for t in op_tags)
        elif included is not None:
            marks.extend(mark_name("", t) for t in rule.ops_include[included])
        if fp.supported_ops is not None:
            op = next((fp.supported_ops[a] for a in aliases if a in fp.supported_ops), None)

    force_xfail = bool(op and op.force_xfail)
    precision = None
    for name in dtypes:
        marks.append(mark_name("dtype__", name))
        inc = rule.dtypes_include.get(name) if rule else None
        if rule and name in rule.dtypes_exclude:
            return Decision(False, mode, f"dtype {name} excluded by {rule.source}", rule=rule)
        glob = fp.supported_dtypes.get(name) if fp.supported_dtypes is not None else None
        op_dt = op.dtypes.get(name) if op is not None and op.dtypes is not None else None
        if inc is None and fp.supported_dtypes is not None and glob is None:
            return Decision(False, mode, f"dtype {name} not in supported_dtypes", rule=rule)
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


def included_dtypes(fp: FilePlan, method: str) -> List[str]:
    """dtypes the rules naming a test add beyond the ones upstream instantiates (the union
    is taken over every entry naming the test)."""
    return list(dict.fromkeys(d for r in fp.rules_for(method) for d in r.dtypes_include))


def included_ops(fp: FilePlan, method: str) -> List[str]:
    """OpInfo names the rules add to the test's @ops list (includes without sample_inputs_func;
    those with it are model-derived op tests, ootci_torch.model_ops)."""
    out = []
    for r in fp.rules_for(method):
        for inc in (r.raw.get("ops") or {}).get("include") or []:
            if "sample_inputs_func" not in inc:
                out.append(inc["name"])
    return list(dict.fromkeys(out))
