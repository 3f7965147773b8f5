# Throwaway PostgreSQL server for tests. Source this file, then:
#   pg_start DIR     # exports OOTCI_TEST_PG_URI and OOTCI_TEST_PG_DIR
#   pg_restart DIR   # an immediate (crash-like) restart, for the relay chaos bench
#   pg_stop DIR
# Everything runs as root here, and initdb/postgres refuse root, so the server runs as the
# `postgres` user that Debian's postgresql package creates.

# Newest installed PostgreSQL bin dir (Debian keeps one per major version).
_pg_bindir() {
  local postgres
  postgres=$(printf '%s\n' /usr/lib/postgresql/*/bin/postgres | sort -V | tail -n 1)
  [[ -x $postgres ]] || return 1
  dirname "$postgres"
}

# Runs from / so the postgres user is not left in a cwd it cannot read (root's home).
_pg_as_postgres() {
  (cd / && runuser -u postgres -- "$@")
}

# A TCP port nobody listens on right now. The kernel picks it, so parallel runs do not collide
# except in the brief window before the server binds it.
_pg_free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    return
  fi
  local port i
  for ((i = 0; i < 100; i++)); do
    port=$((20000 + RANDOM % 40000))
    # A refused connection means nothing listens there.
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  return 1
}

pg_start() {
  local dir bin port i
  # Absolute: the server resolves paths from its data directory, not from here.
  dir=$(realpath -m "${1:?usage: pg_start DIR}") || return 1
  if ! bin=$(_pg_bindir); then
    echo "pg_start: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin;" \
      "install the postgresql package (scripts/setup does)" >&2
    return 1
  fi
  if ! id postgres >/dev/null 2>&1; then
    echo "pg_start: no 'postgres' user; install the postgresql package (scripts/setup does)" >&2
    return 1
  fi
  port=$(_pg_free_port) || { echo "pg_start: cannot find a free port" >&2; return 1; }

  mkdir -p "$dir/sock" || return 1
  chown -R postgres: "$dir" || return 1
  if ! _pg_as_postgres "$bin/initdb" -D "$dir/data" --auth=trust -U postgres >"$dir/initdb.log" 2>&1; then
    echo "pg_start: initdb failed:" >&2
    cat "$dir/initdb.log" >&2
    return 1
  fi
  # fsync off: the data is thrown away, and durability costs seconds per test run.
  if ! _pg_as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -W \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir/sock -c fsync=off" \
    start >/dev/null; then
    echo "pg_start: pg_ctl start failed; see $dir/log" >&2
    return 1
  fi
  for ((i = 0; i < 300; i++)); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break
    sleep 0.1
  done
  if ((i == 300)); then
    echo "pg_start: server on port $port not ready after 30 s; log follows:" >&2
    cat "$dir/log" >&2
    pg_stop "$dir"
    return 1
  fi
  if ! _pg_as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres ootci_test; then
    echo "pg_start: createdb ootci_test failed" >&2
    pg_stop "$dir"
    return 1
  fi
  export OOTCI_TEST_PG_URI="postgresql://postgres@127.0.0.1:$port/ootci_test"
  export OOTCI_TEST_PG_DIR="$dir"
}

# Immediate mode: the server drops every connection without a checkpoint, as a crash would, and
# recovers from its WAL on the way up. pg_ctl reuses the options it was started with.
pg_restart() {
  local dir bin
  dir=$(realpath -m "${1:?usage: pg_restart DIR}") || return 1
  bin=$(_pg_bindir) || return 1
  _pg_as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -m immediate -w restart >/dev/null
}

pg_stop() {
  local dir bin
  dir=$(realpath -m "${1:?usage: pg_stop DIR}") || return 1
  bin=$(_pg_bindir) || return 0
  # Nothing to stop when the server never started or has already gone.
  [[ -f $dir/data/postmaster.pid ]] || return 0
  _pg_as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}
