#!/usr/bin/env bash
# `scripts/test --changed`'s choice (scripts/lib/changed_suites.sh) on a change made in a
# throwaway worktree of this checkout: each kind of file brings the suites it should, and
# nothing else.
#   tests/standalone/changed_suites_test.sh SOURCE_DIR
set -euo pipefail
src=$(realpath "$1")
tmp=$(mktemp -d /tmp/ootci-changed-XXXXXX)
trap 'git -C "$src" worktree remove --force "$tmp/tree" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git -C "$src" worktree add --detach -q "$tmp/tree" HEAD
cd "$tmp/tree"
fail() { echo "changed suites: FAIL: $*" >&2; exit 1; }
source scripts/lib/changed_suites.sh

expect() {  # WHAT LABELS PYTHON STAGES WHOLE
  [[ "${changed_labels[*]}" == "$2" ]] || fail "$1: labels '${changed_labels[*]}', expected '$2'"
  [[ "${changed_python[*]}" == "$3" ]] || fail "$1: python '${changed_python[*]}', expected '$3'"
  [[ "${changed_stages[*]}" == "$4" ]] || fail "$1: stages '${changed_stages[*]}', expected '$4'"
  [[ "${changed_whole[*]}" == "$5" ]] || fail "$1: whole '${changed_whole[*]}', expected '$5'"
  echo "changed suites: ok: $1"
}

changed_suites HEAD
expect "no change" "" "" "" ""

echo "// a change" >>src/sql/sqlite_db.cc
changed_suites HEAD
expect "src/sql (unstaged)" "callback_integration relay_integration sql" "" "" ""

git add src/sql/sqlite_db.cc
echo "# a change" >>tests/backend/test_tolerance.py
echo "a change" >>docs/run.md
changed_suites HEAD
expect "staged, a python suite's file, docs" "callback_integration relay_integration sql" \
  "select_acceptance" "" ""

git -c user.name=t -c user.email=t@t commit -qam "a commit"
base=$(git rev-parse HEAD~1)
echo "new" >tests/browser/new_test.mjs  # untracked
echo "# a change" >>scripts/demo
echo "// a change" >>tests/relay_integration_test.cc
echo "# a change" >>src/job/templates/ootci.yml
changed_suites "$base"
expect "committed since BASE, new, a script, a job template" \
  "agent_integration callback_integration gate_cli init_cli job relay_integration report_integration sql" \
  "select_acceptance" "browser workflows" "scripts/demo"
