#!/usr/bin/env bash
# The Debian package as a user gets it: scripts/package builds it; unpacked with dpkg-deb -x into
# a temporary root (never installed system-wide), its ootci prints CMake's version, checks the
# reference backend's configs and runs two upstream tests on the reference backend, with the
# Python package from the unpacked share/ootci/python (the installed-layout rule), not the source
# tree's. scripts/test runs it after ctest.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)
source scripts/lib/torch_suite.sh
source tests/package/tiny_run.sh
fail() { echo "package test: FAIL: $*" >&2; exit 1; }
ok() { echo "package test: ok: $*"; }

deb=$(scripts/package deb)
tmp=$(mktemp -d /tmp/ootci-package-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "${OOTCI_PACKAGE_FROM:-build-package}/CMakeCache.txt")
[[ $deb == "dist/ootci_${version}_$(dpkg --print-architecture).deb" && -f $deb ]] ||
  fail "scripts/package printed '$deb'"
ok "$deb ($(du -h "$deb" | cut -f1))"

# The package's metadata and files: what the units and the binary need, no tests, no caches.
[[ $(dpkg-deb -f "$deb" Package) == ootci && $(dpkg-deb -f "$deb" Version) == "$version" ]] ||
  fail "control: $(dpkg-deb -f "$deb" Package Version)"
depends=$(dpkg-deb -f "$deb" Depends)
[[ $depends == *python3* && $depends == *libc6* ]] || fail "Depends: $depends"
[[ $(dpkg-deb -f "$deb" Recommends) == *python3-torch* ]] || fail "Recommends"
listing=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/ootci ./usr/share/ootci/python/ootci_torch/device_base.py \
  ./usr/share/ootci/python/ootci_torch/csrc/op_observer.cpp \
  ./usr/share/ootci/python/shims/expecttest.py \
  ./usr/share/doc/ootci/README.md ./usr/share/doc/ootci/run.md ./usr/share/doc/ootci/copyright \
  ./lib/systemd/system/ootci-relay.service ./lib/systemd/system/ootci-agent.service \
  ./etc/ootci/relay.yaml.example ./etc/ootci/agent.yaml.example; do
  grep -qxF "$f" <<<"$listing" || fail "$f is not in the package"
done
if grep -E '_test$|__pycache__|\.pyc$|^\./usr/(include|lib)/' <<<"$listing"; then
  fail "the package holds files it must not"
fi
control=$tmp/DEBIAN
dpkg-deb -e "$deb" "$control"
[[ -x $control/postinst && -x $control/prerm ]] || fail "postinst/prerm missing or not executable"
grep -qxF /etc/ootci/relay.yaml.example "$control/conffiles" || fail "conffiles"
ok "$(wc -l <<<"$listing") entries, Depends: $depends"

dpkg-deb -x "$deb" "$tmp/root"
ootci=$tmp/root/usr/bin/ootci
copyright=$tmp/root/usr/share/doc/ootci/copyright
grep -qx 'License: BSD-3-Clause' "$copyright" && grep -qx ' Redistribution and use in source and binary forms, with or without' "$copyright" ||
  fail "copyright: $(head -12 "$copyright")"
[[ $(dpkg-deb -f "$deb" Homepage) == https://* ]] || fail "Homepage: $(dpkg-deb -f "$deb" Homepage)"
ok "copyright (BSD-3-Clause, from LICENSE), Homepage $(dpkg-deb -f "$deb" Homepage)"

# The units, with ExecStart pointed at the unpacked binary (verify wants it to exist). verify
# exits 0 on unknown keys and bad values, so any output is a failure.
if command -v systemd-analyze >/dev/null; then
  mkdir "$tmp/units"
  for unit in ootci-relay.service ootci-agent.service; do
    sed "s|^ExecStart=/usr/bin/ootci |ExecStart=$ootci |" "$tmp/root/lib/systemd/system/$unit" \
      >"$tmp/units/$unit"
  done
  if ! out=$(systemd-analyze verify "$tmp"/units/*.service 2>&1) || [[ -n $out ]]; then
    fail "systemd-analyze verify: $out"
  fi
  ok "systemd-analyze verify: both units clean"
fi

# From here on only the installed-layout rule may find the Python package.
unset OOTCI_PYTHON_DIR
export PYTHONDONTWRITEBYTECODE=1

line=$("$ootci" --version)
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "${OOTCI_PACKAGE_FROM:-build-package}/CMakeCache.txt")
[[ $line == "ootci $version (git "*", $build_type)" ]] || fail "--version printed '$line'"
ok "$line"

# The reference backend's configs check, and its ootci.yaml resolves them on the real suite.
out=$("$ootci" plan check examples/reference-backend/configs/*.yaml 2>&1) || fail "plan check: $out"
ok "plan check: $out"
torch_root=${OOTCI_TORCH_ROOT:-$(torch_suite_root)}
out=$(TORCH_ROOT=$torch_root "$ootci" plan resolve --config examples/reference-backend/ootci.yaml \
  -o "$tmp/plan.json" 2>&1) || fail "plan resolve: $out"
ok "plan resolve: $out"

# The tiny plan (tests/package/tiny_run.sh), with the unpacked Python package.
python_dir=$tmp/root/usr/share/ootci/python
tiny_run_prepare "$python_dir" "$torch_root"
ws=$tmp/ws

env_json=$(cd "$ws" && "$ootci" plan env --config ootci.yaml --json 2>/dev/null)
[[ $env_json == *"\"PYTHONPATH\": \"$python_dir:"* ]] || fail "plan env: $env_json"
ok "plan env: PYTHONPATH starts with the unpacked $python_dir"

if ! out=$(cd "$ws" && "$ootci" run --config ootci.yaml 2>&1); then
  echo "$out" >&2
  fail "ootci run exited non-zero"
fi
imports=$(tiny_run_check "$out" "$python_dir")
ok "ootci run: $(grep '^run r-' <<<"$out"); $imports import(s) of ootci_torch, all unpacked"
echo "package test: passed"
