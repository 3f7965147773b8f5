#!/usr/bin/python3
"""What attribution costs: the extra test executions of `ootci attribute`, as a share of the run it
attributes, over issue 9's seven scenarios (docs/attribute.md, "Cost").

Each scenario builds the attribution test bed (tests/fixtures/attribution), but with a primary
plan of realistic size: the reference backend's own full configs for test_view_ops.py and
test_reductions.py (about 3000 variants) instead of the bed's 30 view-ops variants, committed as
part of the backend repo's base commit. Then: a green `ootci run`, the scenario's commits (ranges
of 8 commits around the breaking one), a red `ootci run`, and `ootci attribute` on it. The numbers
come from the verdict (`executions`, `primary_executions`, `probes`, `probe_bound`).

Run on purpose (3 to 4 minutes per scenario on 2 cores), never from scripts/test:
  /usr/bin/python3 bench/attribution_cost.py [--scenarios 1,3,5] [--isolation fork|spawn] [--workdir DIR] [--keep]
Needs build/ootci (copied to the work folder first, so a rebuild meanwhile does not swap it) and
the upstream PyTorch tree in TORCH_ROOT (default: ~/.cache/ootci/pytorch-1.13.1+dfsg-4).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SOURCE_DIR / "tests" / "fixtures" / "attribution"))
import make_fixture  # noqa: E402
from make_fixture import (backend_break_op, core_break_op, filler_commits,  # noqa: E402
                          tests_expose_failure)

REFERENCE_CONFIGS = SOURCE_DIR / "examples" / "reference-backend" / "configs"
FULL_PLAN = ("test_view_ops.yaml", "test_reductions.yaml")
DEFAULT_TORCH_ROOT = pathlib.Path.home() / ".cache" / "ootci" / "pytorch-1.13.1+dfsg-4"
RUN_LINE = re.compile(r"^run (\S+) finished \((success|failure)\)", re.M)

# The bed switches cumsum off (so that an upstream test change can expose it); this is the one
# variant of the reference plan that calls it, so it is an xfail here rather than a red green run.
CUMSUM_VARIANT = "            - TestReductions::test_reduce_dtype\n"
CUMSUM_XFAIL = ("        # The attribution bed switches cumsum off (backend.env OOTCI_REF_DISABLED_OPS).\n"
                "        - names: [TestReductions::test_reduce_dtype]\n"
                "          mode: xfail\n")


class ScenarioError(Exception):
    pass


class Bench:
    def __init__(self, ootci: pathlib.Path, workdir: pathlib.Path, upstream_base: pathlib.Path,
                 isolation=None):
        self.ootci = ootci
        self.workdir = workdir
        self.upstream_base = upstream_base
        self.isolation = ["--isolation", isolation] if isolation else []

    def bed(self, name: str, intermittent=False) -> make_fixture.Fixture:
        fx = make_fixture.make_fixture(self.workdir / name, upstream_base=self.upstream_base)
        use_full_plan(fx)
        if intermittent:
            make_fixture.add_intermittent_test(fx)
        return fx

    def ootci_cmd(self, fx, *args, env=None):
        started = time.monotonic()
        proc = subprocess.run([str(self.ootci), *args], capture_output=True, text=True, cwd=fx.root,
                              env=fx.env(**(env or {})))
        return proc, time.monotonic() - started

    def run(self, fx, expect: str, env=None):
        """`ootci run`; returns (run id, wall seconds) or raises when its verdict is not `expect`."""
        proc, wall = self.ootci_cmd(fx, "run", "--config", str(fx.config), *self.isolation, env=env)
        m = RUN_LINE.search(proc.stdout)
        if not m or m.group(2) != expect:
            raise ScenarioError(f"expected a {expect} run; ootci run exited {proc.returncode}:\n"
                                f"{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
        return m.group(1), wall

    def attribute(self, fx, run_id: str, env=None):
        proc, wall = self.ootci_cmd(fx, "attribute", "--config", str(fx.config), "--run", run_id,
                                    *self.isolation, env=env)
        run_dir = fx.workspace / "runs" / run_id
        verdict_path = run_dir / "triage_verdict.json"
        if proc.returncode != 0 or not verdict_path.exists():
            raise ScenarioError(f"ootci attribute exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                                f"{proc.stderr[-3000:]}")
        return json.loads(verdict_path.read_text()), run_dir / "triage.md", wall


def use_full_plan(fx: make_fixture.Fixture):
    """Replaces the bed's 30-variant plan by the reference backend's full configs, in the base commit."""
    configs = fx.backend / "configs"
    for old in configs.iterdir():
        old.unlink()
    for name in FULL_PLAN:
        text = (REFERENCE_CONFIGS / name).read_text()
        if name == "test_reductions.yaml":
            if text.count(CUMSUM_VARIANT) != 1:
                raise ScenarioError(f"{REFERENCE_CONFIGS / name}: no single '{CUMSUM_VARIANT.strip()}' "
                                    "entry to turn into an xfail")
            text = text.replace(CUMSUM_VARIANT, "").rstrip("\n") + "\n" + CUMSUM_XFAIL
        (configs / name).write_text(text)
    make_fixture.git(fx.backend, "add", "-A")
    make_fixture.git(fx.backend, "commit", "-q", "--amend", "-m",
                     "reference backend with its full view-ops and reductions plans")


def around(repo, breaking, before=4, after=3) -> str:
    """`before` filler commits, the breaking commit, `after` more: a range of 8. Returns the culprit."""
    filler_commits(repo, before)
    culprit = breaking()
    filler_commits(repo, after)
    return culprit


# Each scenario: (title, expected category, intermittent bed?, setup). setup(fx) commits the moves
# after the green run and returns (expected culprit sha or None, extra env of the red run and the
# attribution).
def only_backend(fx):
    return around(fx.backend, lambda: backend_break_op(fx)), {}


def only_tests(fx):
    return around(fx.upstream, lambda: tests_expose_failure(fx)), {}


def only_core(fx):
    return around(fx.core, lambda: core_break_op(fx)), {}


def backend_and_core_culprit_core(fx):
    filler_commits(fx.backend, 8)
    return around(fx.core, lambda: core_break_op(fx)), {}


def backend_and_core_culprit_backend(fx):
    culprit = around(fx.backend, lambda: backend_break_op(fx))
    filler_commits(fx.core, 8)
    return culprit, {}


def flake(fx):
    filler_commits(fx.backend, 8)
    # The intermittent test fails its first 3 executions (the red run's try and 2 reruns).
    return None, {"OOTCI_FIXTURE_INTERMITTENT_COUNTER": fx.root / "intermittent.count"}


def interpreter_missing(fx):
    filler_commits(fx.backend, 8)
    fx.python.unlink()  # ootci.yaml's backend.python
    return None, {}


SCENARIOS = {
    1: ("backend only", "backend", False, only_backend),
    2: ("tests only", "upstream", False, only_tests),
    3: ("core only", "upstream", False, only_core),
    4: ("backend+core, culprit core", "upstream", False, backend_and_core_culprit_core),
    5: ("backend+core, culprit backend", "backend", False, backend_and_core_culprit_backend),
    6: ("flake", "flake", True, flake),
    7: ("infra: interpreter missing", "infra", False, interpreter_missing),
}


def run_scenario(bench: Bench, number: int) -> dict:
    title, expected, intermittent, setup = SCENARIOS[number]
    row = {"n": number, "title": title, "expected": expected}
    fx = bench.bed(f"s{number}", intermittent=intermittent)
    row["root"] = str(fx.root)
    _, row["green_wall"] = bench.run(fx, "success")
    culprit, env = setup(fx)
    red, row["primary_wall"] = bench.run(fx, "failure", env=env)
    verdict, triage_md, row["attr_wall"] = bench.attribute(fx, red, env=env)
    found = (verdict.get("culprit") or {}).get("sha")
    newly = next((e for e in verdict.get("evidence", []) if e.get("kind") == "newly failing"), {})
    row.update(category=verdict.get("category"), culprit_ok=found == culprit,
               probes=verdict.get("probes"), bound=verdict.get("probe_bound"),
               executions=verdict.get("executions"), primary=verdict.get("primary_executions"),
               failing=newly.get("count"), verdict=verdict, triage_md=str(triage_md),
               expected_culprit=culprit)
    row["right"] = row["category"] == expected and row["culprit_ok"]
    return row


def seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def share(part, whole) -> float:
    return 100.0 * part / whole if whole else float("nan")


def print_table(rows):
    print("\n| # | scenario | category | culprit | failing | probes / bound | attribution exec | "
          "primary exec | share | attribution wall | wall per probe | primary run wall |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    done = [r for r in rows if "error" not in r]
    for r in rows:
        if "error" in r:
            print(f"| {r['n']} | {r['title']} | error: see above | | | | | | | | | |")
            continue
        category = f"{r['category']} ({'ok' if r['category'] == r['expected'] else 'expected ' + r['expected']})"
        culprit = ("ok" if r["expected_culprit"] else "none (ok)") if r["culprit_ok"] else "WRONG"
        probes = f"{r['probes']} / {r['bound']}" if r["bound"] else f"{r['probes']} / -"
        print(f"| {r['n']} | {r['title']} | {category} | {culprit} | {r['failing']} | {probes} | "
              f"{r['executions']} | {r['primary']} | {share(r['executions'], r['primary']):.2f}% | "
              f"{seconds(r['attr_wall'])} | "
              f"{seconds(r['attr_wall'] / r['probes']) if r['probes'] else '-'} | "
              f"{seconds(r['primary_wall'])} |")
    if done:
        executions = sum(r["executions"] for r in done)
        primary = sum(r["primary"] for r in done)
        mean = sum(share(r["executions"], r["primary"]) for r in done) / len(done)
        print(f"\ntotal share: {executions} / {primary} executions = {share(executions, primary):.2f}%; "
              f"mean share {mean:.2f}% over {len(done)} scenarios; "
              f"{sum(r['right'] for r in done)} of {len(done)} verdicts right")
        # Scenario 7's red run starts no pytest at all, so its share is against a handful of
        # whole-file results and says nothing about the plan's size.
        tested = [r for r in done if r["n"] != 7]
        if len(tested) < len(done) and tested:
            mean = sum(share(r["executions"], r["primary"]) for r in tested) / len(tested)
            print(f"mean share without scenario 7 (its red run could not start pytest): {mean:.2f}%")


def parse_scenarios(text: str) -> list:
    try:
        numbers = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        numbers = []
    if not numbers or any(n not in SCENARIOS for n in numbers):
        raise argparse.ArgumentTypeError(f"'{text}': give scenario numbers 1..7, comma-separated")
    return numbers


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=parse_scenarios, default=sorted(SCENARIOS),
                        help="comma-separated scenario numbers (default: all): " +
                        "; ".join(f"{n} {s[0]}" for n, s in SCENARIOS.items()))
    parser.add_argument("--workdir", type=pathlib.Path,
                        help="an empty or new folder for the beds (default: a fresh temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder afterwards")
    parser.add_argument("--isolation", choices=("fork", "spawn"),
                        help="ootci run and attribute --isolation (default: run.isolation)")
    parser.add_argument("--ootci", type=pathlib.Path, default=SOURCE_DIR / "build" / "ootci",
                        help="the ootci binary to copy and use (default: build/ootci)")
    args = parser.parse_args(argv)

    torch_root = pathlib.Path(os.environ.get("TORCH_ROOT") or DEFAULT_TORCH_ROOT)
    if not (torch_root / "test" / "test_view_ops.py").exists():
        parser.error(f"{torch_root}: no test/test_view_ops.py; set TORCH_ROOT to the upstream PyTorch tree")
    if not args.ootci.is_file():
        parser.error(f"{args.ootci} is missing; build it first")
    if args.workdir:
        workdir = args.workdir.resolve()
        if workdir.exists() and any(workdir.iterdir()):
            parser.error(f"--workdir {workdir} is not empty")
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="ootci-attribution-cost-"))

    ootci = workdir / "ootci"
    shutil.copy2(args.ootci, ootci)
    print(f"work folder {workdir}; upstream base from {torch_root}", flush=True)
    upstream_base = make_fixture.build_upstream_base(workdir / "upstream-base" / "upstream", torch_root)
    bench = Bench(ootci, workdir, upstream_base, args.isolation)

    rows, keep = [], args.keep
    for number in args.scenarios:
        print(f"scenario {number}: {SCENARIOS[number][0]} ...", flush=True)
        try:
            row = run_scenario(bench, number)
        except (ScenarioError, RuntimeError, subprocess.SubprocessError) as e:
            print(f"scenario {number} failed: {e}", flush=True)
            rows.append({"n": number, "title": SCENARIOS[number][0], "error": str(e)})
            keep = True
            continue
        rows.append(row)
        print(f"  {row['category']}, {row['executions']} / {row['primary']} executions, "
              f"green {seconds(row['green_wall'])}, red {seconds(row['primary_wall'])}, "
              f"attribute {seconds(row['attr_wall'])}", flush=True)
        if not row["right"]:
            keep = True
            print(f"  WRONG VERDICT (expected {row['expected']}, culprit {row['expected_culprit']}); "
                  f"bed kept at {row['root']}\n{json.dumps(row['verdict'], indent=1)}\n--- "
                  f"{row['triage_md']}:\n{pathlib.Path(row['triage_md']).read_text()}", flush=True)

    print_table(rows)
    if keep:
        print(f"\nwork folder kept: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if rows and all(r.get("right") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
