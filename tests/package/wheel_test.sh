#!/usr/bin/env bash
# The wheel as a user gets it: scripts/package builds it, pip installs it with --no-index into a
# fresh virtual environment of the bed's Python (never into the system), and its ootci runs there:
# --version (the wheel's metadata version), `import ootci_torch`, ldd with nothing "not found",
# plan check, a relay on SQLite taking a signed webhook and dispatching it, and a two-test run on
# the reference backend whose pytest processes import the installed ootci_torch.
#   OOTCI_TORCH_BED=debian12 (default)  on this machine (tests/package/wheel_test.sh, scripts/test)
#   OOTCI_TORCH_BED=trixie              inside the Debian 13 root of scripts/lib/torch_bed.sh: another
#                                       distribution, with Python and torch but no ootci build
#                                       dependency (no yaml-cpp, spdlog, pqxx, OpenSSL 3.0, ...)
# On this machine it also checks what the wheel refuses: an install where glibc is older than the
# tag (pip), a binary needing a newer glibc (the policy check), a missing ootci_torch (ootci).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)
source scripts/lib/torch_suite.sh
source scripts/lib/torch_bed.sh
source tests/package/tiny_run.sh
bed=$(torch_bed_name)
fail() { echo "wheel test ($bed): FAIL: $*" >&2; exit 1; }
ok() { echo "wheel test ($bed): ok: $*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }

mapfile -t built < <(scripts/package wheel)
wheel=${built[0]:-}
build_dir=${OOTCI_PACKAGE_FROM:-build-package}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build_dir/CMakeCache.txt")
[[ $wheel == "dist/ootci-$version-py3-none-manylinux_2_34_x86_64.whl" && -f $wheel ]] ||
  fail "scripts/package printed '${built[*]}'"
size=$(stat -c %s "$wheel")
((size < 30 * 1024 * 1024)) || fail "$wheel is $size bytes, over 30 MB"
ok "$wheel ($((size / 1024)) KiB)"

root=$(torch_bed_root)
torch_root=$(torch_bed_suite)
in_bed() { OOTCI_BED_SOURCE_DIR=$src torch_bed_chroot "$root" "$PWD" "$@"; }
tmp=$(mktemp -d /tmp/ootci-wheel-test-XXXXXX)
pids=()
# $! of `in_bed ... &` is the subshell around unshare and chroot, not the relay: killing it left the
# relay running after the test. The relay is found by its config file, which only it names.
relay_command="relay serve --config $tmp/relay.yaml"
stop_relay() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "$relay_command" 2>/dev/null || true
  wait 2>/dev/null || true
  for _ in $(seq 100); do pgrep -f "$relay_command" >/dev/null || break; sleep 0.1; done
}
cleanup() {
  stop_relay
  if [[ -n ${OOTCI_WHEEL_TEST_KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
export PYTHONDONTWRITEBYTECODE=1
unset OOTCI_PYTHON_DIR

# A fresh virtual environment of the bed's Python, and the wheel in it from the file alone.
venv=$tmp/venv
in_bed /usr/bin/python3 -m venv "$venv" || fail "python3 -m venv"
started=$(now)
out=$(in_bed "$venv/bin/pip" install --no-index --disable-pip-version-check -q "$src/$wheel" 2>&1) ||
  fail "pip install: $out"
ok "pip install --no-index: $(elapsed "$started")"
ootci=$venv/bin/ootci
[[ -x $ootci ]] || fail "$ootci is not there"

meta=$(in_bed "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("ootci"), m.metadata("ootci")["License"])')
[[ $meta == "$version BSD-3-Clause" ]] || fail "metadata: $meta"
line=$(in_bed "$ootci" --version) || fail "ootci --version"
[[ $line == "ootci $version (git "* ]] || fail "--version printed '$line'"
ok "$line, metadata $meta"
imported=$(in_bed "$venv/bin/python" -c 'import ootci_torch; print(ootci_torch.__file__)') ||
  fail "import ootci_torch"
python_dir=$venv/share/ootci/python
[[ $imported == "$python_dir/ootci_torch/__init__.py" ]] || fail "ootci_torch imported from $imported"
ok "import ootci_torch: $imported"

libs=$(in_bed ldd "$ootci")
if grep -q "not found" <<<"$libs"; then fail "ldd: $(grep 'not found' <<<"$libs")"; fi
bundled=$(grep -c "=> $venv/bin/../lib/ootci/" <<<"$libs" || true)
system=$(grep '=> /' <<<"$libs" | grep -v "=> $venv/" | awk '{print $1}' | sort | tr '\n' ' ')
ok "ldd: nothing not found; $bundled libraries from the wheel, from the system: $system"

# Start time, wheel against the build tree's binary (a measurement, not an assertion). In another
# distribution the build tree's binary does not start at all: its libraries are Debian 12's.
tree=$src/$build_dir/ootci
if [[ $bed != debian12 ]]; then
  if out=$(in_bed "$tree" --version 2>&1); then fail "the build tree's ootci ran in $bed: $out"; fi
  ok "the build tree's ootci in $bed: $out"
  tree=""
fi
mean_ms() {  # mean_ms BINARY: mean wall time of 20 `BINARY --version`, timed inside the bed
  in_bed /bin/sh -c 's=$(date +%s%N); for i in $(seq 20); do "$1" --version >/dev/null; done
    echo $((($(date +%s%N) - s) / 20000000))' sh "$1"
}
wheel_ms=$(mean_ms "$ootci")
times="wheel $wheel_ms ms"
if [[ -n $tree ]]; then
  tree_ms=$(mean_ms "$tree")
  wheel_ms=$(mean_ms "$ootci")  # again, after the build tree's, so that neither only goes first
  times="wheel $wheel_ms ms, build tree $tree_ms ms"
fi
ok "ootci --version, mean of 20: $times"

out=$(in_bed "$ootci" plan check examples/reference-backend/configs/*.yaml 2>&1) || fail "plan check: $out"
ok "plan check: $out"

# The relay on SQLite: GitHub's example webhook signed with the secret is taken and dispatched
# (signed) to a downstream's webhook, a forgery is refused.
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
relay_port=$(free_port) receiver_port=$(free_port)
/usr/bin/python3 -c '
import http.server, sys
class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(sys.argv[2] + ".body", "wb") as f:
            f.write(body)
        with open(sys.argv[2] + ".signature", "w") as f:  # written last: the test waits for it
            f.write(self.headers.get("X-Ootci-Signature-256", ""))
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
' "$receiver_port" "$tmp/dispatch" &
pids+=($!)
printf 'L1:\n  - acme/backend\n' >"$tmp/allowlist.yml"
cat >"$tmp/relay.yaml" <<YAML
listen: 127.0.0.1:$relay_port
upstream_repo: Codertocat/Hello-World
store: sqlite:$tmp/relay.db
allowlist: $tmp/allowlist.yml
webhook_secret_env: WHEEL_TEST_WEBHOOK_SECRET
downstreams:
  acme/backend:
    transport: webhook
    url: http://127.0.0.1:$receiver_port/dispatch
    secret_env: WHEEL_TEST_DISPATCH_SECRET
dispatch:
  max_attempts: 3
  initial_backoff_ms: 200
YAML
export WHEEL_TEST_WEBHOOK_SECRET=webhook-secret WHEEL_TEST_DISPATCH_SECRET=dispatch-secret
in_bed "$ootci" relay serve --config "$tmp/relay.yaml" >"$tmp/relay.log" 2>&1 &
pids+=($!)
relay=http://127.0.0.1:$relay_port
for _ in $(seq 100); do curl -sf "$relay/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "$relay/healthz" >/dev/null || { cat "$tmp/relay.log" >&2; fail "the relay did not start"; }
webhook=tests/fixtures/github-webhooks/pull_request.opened.json
send() {  # send DELIVERY SECRET: prints the HTTP status
  local sig
  sig="sha256=$(openssl dgst -sha256 -hmac "$2" -r <"$webhook" | cut -d' ' -f1)"
  curl -s -o /dev/null -w '%{http_code}' -X POST "$relay/github/webhook" -H "X-GitHub-Event: pull_request" \
    -H "X-GitHub-Delivery: $1" -H "X-Hub-Signature-256: $sig" -H 'Content-Type: application/json' \
    --data-binary "@$webhook"
}
[[ $(send wheel-forged wrong-secret) == 401 ]] || fail "a forged webhook was not refused with 401"
[[ $(send wheel-signed "$WHEEL_TEST_WEBHOOK_SECRET") == 200 ]] || { cat "$tmp/relay.log" >&2; fail "the signed webhook was not taken"; }
for _ in $(seq 100); do [[ -s $tmp/dispatch.signature ]] && break; sleep 0.1; done
[[ -s $tmp/dispatch.signature ]] || { cat "$tmp/relay.log" >&2; fail "no dispatch reached the downstream"; }
signature=$(cat "$tmp/dispatch.signature")
want="sha256=$(openssl dgst -sha256 -hmac "$WHEEL_TEST_DISPATCH_SECRET" -r <"$tmp/dispatch.body" | cut -d' ' -f1)"
[[ $signature == "$want" ]] || fail "the dispatch's signature $signature is not HMAC-SHA256 of its body"
grep -q '"event_type": *"pull_request"' "$tmp/dispatch.body" || fail "dispatch body: $(head -c 300 "$tmp/dispatch.body")"
ok "relay serve (SQLite): forged webhook 401, signed 200, dispatched to acme/backend with a valid signature"
stop_relay
pgrep -f "$relay_command" >/dev/null && fail "the relay outlived the test"
pids=()

# The tiny plan (tests/package/tiny_run.sh), with the installed Python package.
tiny_run_prepare "$python_dir" "$torch_root"
ws=$tmp/ws
started=$(now)
if ! out=$(cd "$ws" && in_bed "$ootci" run --config ootci.yaml 2>&1); then
  echo "$out" >&2
  fail "ootci run exited non-zero"
fi
imports=$(tiny_run_check "$out" "$python_dir")
ok "ootci run: $(grep '^run r-' <<<"$out") in $(elapsed "$started"); $imports import(s) of ootci_torch, all the wheel's"

# Without its Python package, ootci says which folder it looked in.
mv "$python_dir/ootci_torch" "$tmp/ootci_torch.aside"
if out=$(cd "$ws" && in_bed "$ootci" plan env --config ootci.yaml 2>&1); then
  fail "plan env succeeded without ootci_torch: $out"
fi
[[ $out == *"no ootci_torch/ in $python_dir (beside $ootci)"* ]] || fail "plan env without ootci_torch: $out"
ok "without ootci_torch: $(tail -n 1 <<<"$out")"
mv "$tmp/ootci_torch.aside" "$python_dir/ootci_torch"

if [[ $bed == debian12 ]]; then
  # `pip install --prefix`, as the setup action `ootci init` writes installs it, outside any venv
  # (Debian's and Ubuntu's Python put it under PREFIX/local): the same layout below the prefix.
  out=$(/usr/bin/python3 -m pip install --no-index --disable-pip-version-check -q --prefix "$tmp/prefix" "$wheel" 2>&1) ||
    fail "pip install --prefix: $out"
  mapfile -t found < <(find "$tmp/prefix" -path '*/bin/ootci')
  ((${#found[@]} == 1)) || fail "pip install --prefix: bin/ootci found ${#found[@]} times"
  out=$(cd "$ws" && "${found[0]}" plan env --config ootci.yaml --json 2>&1) || fail "plan env (--prefix): $out"
  [[ $out == *"\"PYTHONPATH\": \"${found[0]%/bin/ootci}/share/ootci/python:"* ]] || fail "plan env (--prefix): $out"
  ok "pip install --prefix: ${found[0]#"$tmp/"} finds its share/ootci/python"

  # pip refuses a wheel whose glibc tag is newer than this system's glibc (2.36 here).
  newer=$tmp/ootci-$version-py3-none-manylinux_2_99_x86_64.whl
  cp "$wheel" "$newer"
  if out=$(in_bed "$venv/bin/pip" install --no-index --disable-pip-version-check "$newer" 2>&1); then
    fail "pip installed a manylinux_2_99 wheel on glibc $(ldd --version | head -1)"
  fi
  [[ $out == *"is not a supported wheel on this platform"* ]] || fail "pip on manylinux_2_99: $out"
  ok "a manylinux_2_99 wheel: $(grep -o 'ERROR: .*' <<<"$out")"

  # The policy check: the installed binary passes; a program needing glibc 2.36's arc4random
  # fails, as does one needing GCC 12's libstdc++ until build_wheel unpins what it may unpin.
  check=packaging/wheel/build_wheel.py
  /usr/bin/python3 "$check" --check "$ootci" "$venv"/lib/ootci/*.so* || fail "the policy check fails on the wheel's own files"
  printf '#include <stdlib.h>\nint main(void) { return (int)(arc4random() & 1); }\n' >"$tmp/random.c"
  gcc -o "$tmp/random" "$tmp/random.c"
  if out=$(/usr/bin/python3 "$check" --check "$tmp/random" 2>&1); then fail "the policy check passed arc4random"; fi
  [[ $out == *"needs GLIBC_2.36 from libc.so.6, newer than manylinux_2_34 allows (GLIBC_2.34); used by arc4random"* ]] ||
    fail "policy check on arc4random: $out"
  ok "policy check: $out"
  cat >"$tmp/wait.cc" <<'CC'
#include <condition_variable>
#include <mutex>
int main() {
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [] { return true; });
  cv.wait(lock);  // never returns; the point is the reference
}
CC
  g++ -o "$tmp/wait" "$tmp/wait.cc"
  if out=$(/usr/bin/python3 "$check" --check "$tmp/wait" 2>&1); then fail "the policy check passed GLIBCXX_3.4.30"; fi
  [[ $out == *"needs GLIBCXX_3.4.30 from libstdc++.so.6"* ]] || fail "policy check on condition_variable: $out"
  (cd packaging/wheel && /usr/bin/python3 -c 'import build_wheel, pathlib, sys; build_wheel.unversion_reversioned(pathlib.Path(sys.argv[1]))' "$tmp/wait")
  /usr/bin/python3 "$check" --check "$tmp/wait" || fail "still too new after unversioning"
  readelf -V -W "$tmp/wait" | grep -q GLIBCXX_3.4.30 && fail "GLIBCXX_3.4.30 is still needed after unversioning"
  ok "policy check: condition_variable::wait needs GLIBCXX_3.4.30, and no longer once unpinned"
fi
echo "wheel test ($bed): passed"
