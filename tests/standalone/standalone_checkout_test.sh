#!/usr/bin/env bash
# A clone of this repository alone is enough: nothing the project runs reads the reference shelf
# beside the checkout, and the demo passes from a clone that has no sibling folders at all.
#   standalone_checkout_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1 build_dir=$2
cd "$source_dir"

echo "== nothing the project runs names the shelf beside the checkout"
# Everything git tracks except prose (Markdown: docs and the fixtures' provenance pages).
mapfile -t files < <(git ls-files | grep -vE '\.md$')
# The shelf's folder name, spelled in parts so that this check does not match itself.
shelf=sha
shelf+=red
hits=$(grep -nE "\.\./$shelf|$shelf/(fixtures|reference)" "${files[@]}" || true)
if [[ -n $hits ]]; then
  echo "these lines read the shelf beside the checkout; copy what they need into tests/fixtures:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "   ${#files[@]} tracked files, none names the shelf beside the checkout"

echo "== every fixture folder says where it comes from"
for dir in tests/fixtures/*/; do
  [[ -f $dir/SOURCES.md || -f $dir/README.md ]] || { echo "$dir has no SOURCES.md" >&2; exit 1; }
  name=$(basename "$dir")
  grep -q "\`$name/" tests/fixtures/SOURCES.md || { echo "tests/fixtures/SOURCES.md does not list $name/" >&2; exit 1; }
done

echo "== the demo from a clone with no sibling folders"
parent=$(mktemp -d /tmp/ootci-standalone-XXXXXX)
trap 'rm -rf "$parent"' EXIT
git clone -q --no-hardlinks "$source_dir" "$parent/ootci"
# Uncommitted changes of a developer's tree are part of what is tested.
git diff HEAD | (cd "$parent/ootci" && git apply --allow-empty)
git ls-files --others --exclude-standard -z | xargs -0 -r cp --parents -t "$parent/ootci"
[[ $(ls -A "$parent") == ootci ]] || { echo "the clone has siblings" >&2; exit 1; }
(cd "$parent/ootci" && OOTCI_DEMO_BUILD_DIR="$build_dir" scripts/demo)
