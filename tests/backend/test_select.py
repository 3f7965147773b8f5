"""Issue 8's acceptance: discover and propose on real upstream files with an op switched off.

The proposed configs must validate, running them must be green, and every variant that failed
because of the switched-off op must land in an xfail entry whose reason names that op.
"""
import re
import sqlite3

SWITCHED_OFF = "sum"
FILES = ("test/test_view_ops.py", "test/test_indexing.py")


def entries(config_text):
    """(names, mode, reason) per entry of a written config; reason from its `# ootci:` comment."""
    out, reason, names, in_names = [], None, [], False
    for line in config_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# ootci:"):
            reason = stripped[len("# ootci:"):].strip()
        elif stripped.startswith("- names:"):
            inline = stripped[len("- names:"):].strip()
            names = [n.strip() for n in inline.strip("[]").split(",") if n.strip()] if inline else []
            in_names = not inline
        elif in_names and stripped.startswith("- "):
            names.append(stripped[2:].strip())
        elif stripped.startswith("mode:"):
            out.append((names, stripped.split(":", 1)[1].strip(), reason))
            reason, names, in_names = None, [], False
        else:
            in_names = False
    return out


def test_proposed_configs_validate_run_green_and_name_the_switched_off_op(ws):
    ws.ootci_yaml(env={"OOTCI_REF_DISABLED_OPS": SWITCHED_OFF}, configs=["proposed/*.yaml"],
                  run={"reruns": 0})
    args = ["discover", "--config", "ootci.yaml"]
    for f in FILES:
        args += ["--files", f]
    ws.ootci(*args)
    proposal = ws.ootci("select", "propose", "--config", "ootci.yaml", "--out", "proposed").stdout
    written = sorted((ws.path / "proposed").glob("*.yaml"))
    assert [p.name for p in written] == ["test_indexing.yaml", "test_view_ops.yaml"], proposal

    # Valid Spyre-format configs, by the same checker users run.
    for path in written:
        check = ws.ootci("plan", "check", str(path), check=False)
        assert check.returncode == 0, check.stdout + check.stderr

    # The variants the switch broke, from the discovery's raw outcomes.
    db = sqlite3.connect(ws.path / ".ootci" / "evidence.db")
    broken = db.execute("SELECT test_id, base FROM results WHERE message LIKE "
                        "'%switched off by OOTCI_REF_DISABLED_OPS%'").fetchall()
    assert {t.split("::")[0] for t, _ in broken} == set(FILES), broken  # in both files
    by_name = {}
    for path in written:
        for names, mode, reason in entries(path.read_text()):
            for name in names:
                by_name[name] = (mode, reason)
    for test_id, base in broken:
        variant = "::".join(test_id.split("::")[1:])  # Class::variant, as variant entries name it
        generic_variant = base.split("::")[0] + "::" + test_id.split("::")[-1]
        mode, reason = by_name.get(generic_variant) or by_name.get(variant) or by_name[base]
        assert mode == "xfail", (test_id, mode, reason)
        assert f"aten::{SWITCHED_OFF}" in reason, (test_id, reason)
    # No reason blames a switch for an op that was not switched off.
    for mode, reason in by_name.values():
        for op in re.findall(r"Could not run 'aten::(\w+)' on the reference backend: switched off",
                             reason or ""):
            assert op == SWITCHED_OFF, reason

    # Running the proposal is green: mandatory variants pass, the broken ones are expected failures.
    run = ws.ootci("run", "--config", "ootci.yaml", check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "finished (success)" in run.stdout
    run_id = re.search(r"^run (\S+) finished", run.stdout, re.M).group(1)
    outcomes = dict(db.execute("SELECT test_id, outcome FROM results WHERE run_id = ?", (run_id,)))
    ran_broken = [t for t, _ in broken if t in outcomes]
    assert ran_broken, "the proposal skipped every broken variant instead of expecting it to fail"
    assert all(outcomes[t] == "xfailed" for t in ran_broken), {t: outcomes[t] for t in ran_broken}
    assert sum(o == "passed" for o in outcomes.values()) >= 200
