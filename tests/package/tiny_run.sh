# The tiny plan the package tests run with an installed ootci: two upstream test_view_ops.py
# variants on the reference backend. The installed ootci_torch gets lines that record where it
# was imported from, so the run proves which Python package its pytest processes used.
# Source it; uses $src (the checkout), $tmp (the test's folder) and fail().

tiny_run_prepare() {  # tiny_run_prepare PYTHON_DIR TORCH_ROOT: writes the workspace $tmp/ws
  cat >>"$1/ootci_torch/__init__.py" <<'PY'
import os as _os
if _os.environ.get("OOTCI_TINY_RUN_IMPORTS"):
    with open(_os.environ["OOTCI_TINY_RUN_IMPORTS"], "a") as _f:
        _f.write(__file__ + "\n")
PY
  mkdir -p "$tmp/ws/configs"
  cat >"$tmp/ws/ootci.yaml" <<YAML
backend:
  name: reference
  device_type: privateuseone
  python: /usr/bin/python3
  modules: [ootci_reference_backend]
  pythonpath: [$src/examples/reference-backend]
  env:
    OOTCI_TINY_RUN_IMPORTS: $tmp/imports.txt
upstream:
  torch_root: $2
  device_root: $src/examples/reference-backend
test_configs: [configs/tiny.yaml]
workspace: .ootci
YAML
  cat >"$tmp/ws/configs/tiny.yaml" <<YAML
test_suite_config:
  files:
    - path: \${TORCH_ROOT}/test/test_view_ops.py
      unlisted_test_mode: skip
      tests:
        - names: [TestViewOps::test_view_view, TestViewOps::test_reshape_view]
YAML
}

tiny_run_check() {  # tiny_run_check OUTPUT PYTHON_DIR: prints how many pytest processes imported it
  grep -q '^run r-.* finished (success): 2 results$' <<<"$1" || fail "ootci run: $1"
  [[ -s $tmp/imports.txt ]] || fail "no pytest process imported ootci_torch"
  if grep -vxF "$2/ootci_torch/__init__.py" "$tmp/imports.txt"; then
    fail "ootci_torch was imported from elsewhere"
  fi
  wc -l <"$tmp/imports.txt"
}
