"""Harness for the plan-layer acceptance tests: real `ootci plan` on real upstream PyTorch test
files, run by a real inner pytest against the reference backend.

Each test writes an ootci.yaml and Spyre-format test-suite configs into a temporary folder, resolves
them with the ootci binary, and runs pytest under the environment `ootci plan env` prints.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

collect_ignore = ["fixtures"]  # run only by the inner pytest, under a plan

SOURCE_DIR = pathlib.Path(os.environ.get("OOTCI_SOURCE_DIR") or pathlib.Path(__file__).resolve().parents[2])
BINARY_DIR = pathlib.Path(os.environ.get("OOTCI_BINARY_DIR") or SOURCE_DIR / "build")
OOTCI = BINARY_DIR / "ootci"
BACKEND_DIR = SOURCE_DIR / "examples" / "reference-backend"
# Upstream 2.x's test/conftest.py writes each test's duration after the outcome: "PASSED [0.01s] id".
OUTCOME_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (?:\[[^\]]*\] )?(\S+)")


def torch_root() -> pathlib.Path:
    root = os.environ.get("TORCH_ROOT")
    if not root or not (pathlib.Path(root) / "test" / "test_view_ops.py").exists():
        pytest.fail("TORCH_ROOT must name the upstream PyTorch source tree; scripts/setup prepares it "
                    "(see scripts/lib/torch_suite.sh)", pytrace=False)
    return pathlib.Path(root)


class Run:
    def __init__(self, proc, outcomes, collected):
        self.returncode = proc.returncode
        self.output = proc.stdout + proc.stderr
        self.outcomes = outcomes      # test name (Class::variant) -> PASSED/FAILED/XFAIL/...
        self.collected = collected    # test names, for --collect-only runs

    def names(self, outcome):
        return sorted(n for n, o in self.outcomes.items() if o == outcome)


class Workspace:
    """One backend folder: ootci.yaml plus test-suite configs, resolved and run on demand."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.config_path = "ootci.yaml"
        self.env_overrides = {}

    def write(self, name: str, text: str) -> pathlib.Path:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
        return target

    def config(self, text: str, name="configs/suite.yaml"):
        return self.write(name, text)

    def ootci_yaml(self, env=None, configs=("configs/*.yaml",), run=None):
        lines = [
            "backend:",
            "  name: reference",
            "  device_type: privateuseone",
            "  python: /usr/bin/python3",
            "  modules: [ootci_reference_backend]",
            f"  pythonpath: [{BACKEND_DIR}]",
        ]
        if env:
            lines.append("  env:")
            lines += [f"    {k}: {json.dumps(v)}" for k, v in env.items()]
        lines += ["upstream:", f"  torch_root: {torch_root()}", "test_configs:"]
        lines += [f"  - {c}" for c in configs]
        if run:
            lines.append("run:")
            lines += [f"  {k}: {json.dumps(v)}" for k, v in run.items()]
        (self.path / "ootci.yaml").write_text("\n".join(lines) + "\n")

    def ootci(self, *args, check=True):
        proc = subprocess.run([str(OOTCI), *args], capture_output=True, text=True, cwd=self.path)
        if check and proc.returncode != 0:
            pytest.fail(f"ootci {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}", pytrace=False)
        return proc

    def plan(self) -> dict:
        self.ootci("plan", "resolve", "--config", self.config_path, "-o", "plan.json")
        return json.loads((self.path / "plan.json").read_text())

    def env(self) -> dict:
        self.plan()
        out = self.ootci("plan", "env", "--config", self.config_path, "--plan", "plan.json", "--json").stdout
        env = dict(os.environ)
        env.pop("PYTEST_ADDOPTS", None)
        env.update(json.loads(out))
        env.update(self.env_overrides)
        return env

    def pytest(self, *files, args=(), collect_only=False) -> Run:
        env = self.env()
        paths = [str(torch_root() / "test" / f) if not os.path.isabs(f) else f for f in files]
        cmd = ["/usr/bin/python3", "-m", "pytest", *paths, "-p", "no:cacheprovider", "-q", "-rA",
               "--color=no", *args]
        if collect_only:
            cmd.append("--collect-only")
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=self.path, env=env, timeout=900)
        outcomes, collected = {}, []
        for line in proc.stdout.splitlines():
            m = OUTCOME_LINE.match(line)
            if m and "::" in m.group(2):
                outcomes[short(m.group(2))] = m.group(1)
            elif collect_only and ".py::" in line and not line.startswith(" "):
                collected.append(short(line.strip()))
        if not collect_only and not outcomes and proc.returncode not in (0, 5):
            pytest.fail(f"inner pytest exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}",
                        pytrace=False)
        return Run(proc, outcomes, collected)


def short(nodeid: str) -> str:
    """'.../test_view_ops.py::TestViewOpsPRIVATEUSEONE::test_x' -> 'TestViewOpsPRIVATEUSEONE::test_x'."""
    return "::".join(nodeid.split("::")[1:])


@pytest.fixture
def ws(tmp_path):
    if not OOTCI.exists():
        pytest.fail(f"{OOTCI} is missing; build first (scripts/setup)", pytrace=False)
    w = Workspace(tmp_path)
    w.ootci_yaml()
    return w
