#!/usr/bin/env bash
# Runs pytest over tests/backend files inside a torch bed, as on a machine whose Python and torch
# are the bed's: ootci comes from the wheel (dist/, installed into a virtual environment of the
# bed's Python that sees its torch), ootci_torch from this checkout, TORCH_ROOT is the bed's suite.
#   OOTCI_TORCH_BED=trixie tests/bed/bed_pytest.sh WHEEL FILE... [-- PYTEST ARGS]
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)
source scripts/lib/torch_suite.sh
source scripts/lib/torch_bed.sh
wheel=$(realpath "$1")
shift
files=()
while (($#)) && [[ $1 != -- ]]; do files+=("$1"); shift; done
(($#)) && shift
root=$(torch_bed_root)
suite=$(torch_bed_suite)
tmp=$(mktemp -d /tmp/ootci-bed-pytest-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
in_bed() { OOTCI_BED_SOURCE_DIR=$src torch_bed_chroot "$root" "$PWD" "$@"; }
in_bed /usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
in_bed "$tmp/venv/bin/pip" install --no-index --disable-pip-version-check -q "$wheel"
cd tests/backend
in_bed /usr/bin/env OOTCI_BINARY_DIR="$tmp/venv/bin" OOTCI_PYTHON_DIR="$src/python" \
  OOTCI_SOURCE_DIR="$src" TORCH_ROOT="$suite" PYTHONDONTWRITEBYTECODE=1 \
  /usr/bin/python3 -m pytest "${files[@]}" -q -p no:cacheprovider --color=no "$@"
