# `scripts/test --changed [BASE]`: which suites a change touches, for a contributor's inner loop.
# Source this file; `changed_suites BASE` sets these arrays from the files changed since BASE
# (committed since the merge base, staged, unstaged or new):
#   changed_labels   ctest labels: a folder of src/ ("sql"), a tests/*_test.cc without _test
#                    ("relay_integration"), "scripts" for --changed's own test; each src/
#                    folder also brings the integration and CLI suites that drive it (below)
#   changed_python   python-heavy ctest entries (tests/CMakeLists.txt names them)
#   changed_stages   other stages of scripts/test: browser, workflows, package, fuzz
#   changed_whole    files that can change anything (the build, the scripts): run scripts/test
# The full scripts/test (both torch beds, the sanitizers) stays what CI runs.

# The integration, CLI and python suites that exercise a src/ folder beyond its unit tests.
declare -A changed_suites_of=(
  [sql]="relay_integration callback_integration"
  [relay_store]="relay_integration callback_integration"
  [net]="relay_integration callback_integration"
  [github]="relay_integration callback_integration"
  [relay]="relay_integration callback_integration"
  [hud]="callback_integration stage:browser"
  [hud_seed]="stage:browser"
  [plan]="plan_cli py:plan_adaptation py:spyre_semantics"
  [evidence]="evidence_cli report_integration select_changed_cli stage:browser"
  [run]="evidence_cli agent_integration py:runner_acceptance"
  [job]="gate_cli init_cli report_integration agent_integration stage:workflows"
  [discover]="select_cli py:select_acceptance py:discover_acceptance"
  [adapt]="select_cli py:select_acceptance"
  [select]="select_cli select_changed_cli py:discover_acceptance"
  [attribute]="py:attribute_acceptance py:attribute_acceptance_mixed"
  [cli]="plan_cli evidence_cli gate_cli init_cli select_cli select_changed_cli version_cli relay_integration callback_integration report_integration agent_integration"
)

changed_files() {  # BASE
  local base=$1 merge_base
  merge_base=$(git merge-base "$base" HEAD)
  {
    git diff --name-only "$merge_base"
    git ls-files --others --exclude-standard
  } | sort -u
}

# The python-heavy ctest entry whose command runs tests/backend/FILE.
python_suite_of() {  # FILE
  awk -v f="$1" '/add_test\(NAME/ {name = $2} index($0, " " f " ") && name {print name; exit}' \
    tests/CMakeLists.txt
}

changed_add() {  # WORD: a label, py:SUITE or stage:STAGE
  case $1 in
    py:*) changed_python+=("${1#py:}") ;;
    stage:*) changed_stages+=("${1#stage:}") ;;
    *) changed_labels+=("$1") ;;
  esac
}

changed_suites() {  # BASE
  changed_labels=() changed_python=() changed_stages=() changed_whole=()
  local f folder name word suite
  while read -r f; do
    [[ -z $f ]] && continue
    case $f in
      src/*/*)
        folder=${f#src/}
        folder=${folder%%/*}
        changed_add "$folder"
        for word in ${changed_suites_of[$folder]:-}; do changed_add "$word"; done
        [[ $f == src/job/scaffold* || $f == src/job/templates/* ]] && changed_add stage:workflows
        ;;
      tests/testing/*)
        for word in ${changed_suites_of[cli]}; do changed_add "$word"; done ;;
      tests/*_test.cc)
        name=${f#tests/}
        changed_add "${name%_test.cc}" ;;
      tests/backend/test_*.py)
        suite=$(python_suite_of "${f#tests/backend/}")
        if [[ -n $suite ]]; then changed_add "py:$suite"; else changed_add py:all; fi ;;
      python/* | examples/* | tests/backend/*) changed_add py:all ;;
      tests/browser/*) changed_add stage:browser ;;
      tests/workflows/*) changed_add stage:workflows ;;
      tests/package/* | packaging/*) changed_add stage:package ;;
      fuzz/*) changed_add stage:fuzz ;;
      *.md | docs/* | LICENSE | bench/*) ;;  # nothing to run (bench/ is built by the full suite)
      tests/standalone/changed_suites_test.sh | scripts/lib/changed_suites.sh) changed_add scripts ;;
      *) changed_whole+=("$f") ;;
    esac
  done < <(changed_files "$1")
  mapfile -t changed_labels < <(printf '%s\n' "${changed_labels[@]}" | sort -u | sed '/^$/d')
  mapfile -t changed_python < <(printf '%s\n' "${changed_python[@]}" | sort -u | sed '/^$/d')
  mapfile -t changed_stages < <(printf '%s\n' "${changed_stages[@]}" | sort -u | sed '/^$/d')
}
