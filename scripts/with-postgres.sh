#!/usr/bin/env bash
# Runs a command against a private, throwaway PostgreSQL server and removes the server afterwards,
# whatever the command's outcome.
#
#   scripts/with-postgres.sh COMMAND [ARG...]
#
# The server: initdb in a temporary directory, loopback only (127.0.0.1), a free port, trust
# authentication for the superuser "postgres", fsync off (test data is disposable). The command
# sees KIROKU_TEST_DATABASE_URL (a superuser URL to the "postgres" database) and PGHOST/PGPORT/
# PGUSER. As root, the server runs as the "postgres" system user (PostgreSQL refuses root).
# Environment: KIROKU_PG_DIR to place the data directory (default: a new mktemp -d),
# KIROKU_PG_FSYNC=on to keep fsync (benchmarks).
set -euo pipefail

bindir=$(pg_config --bindir 2>/dev/null || true)
if [ ! -x "$bindir/initdb" ]; then
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
if [ ! -x "$bindir/initdb" ]; then
    echo "with-postgres: initdb not found; install PostgreSQL (make setup)" >&2
    exit 1
fi

workdir=${KIROKU_PG_DIR:-$(mktemp -d -t kiroku-pg.XXXXXX)}
mkdir -p "$workdir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

as_server_user=()
if [ "$(id -u)" = 0 ]; then
    chown -R postgres: "$workdir"
    as_server_user=(runuser -u postgres --)
fi

cleanup() {
    "${as_server_user[@]}" "$bindir/pg_ctl" -D "$workdir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$workdir"
}
trap cleanup EXIT INT TERM

"${as_server_user[@]}" "$bindir/initdb" -D "$workdir/data" -U postgres --auth=trust \
    --encoding=UTF8 --locale=C.UTF-8 >"$workdir/initdb.log" 2>&1 \
    || { cat "$workdir/initdb.log" >&2; exit 1; }

fsync=${KIROKU_PG_FSYNC:-off}
"${as_server_user[@]}" "$bindir/pg_ctl" -D "$workdir/data" -l "$workdir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $workdir -c fsync=$fsync -c max_connections=300" \
    start >/dev/null \
    || { cat "$workdir/server.log" >&2; exit 1; }

export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
export KIROKU_TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:$port/postgres"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($workdir)" >&2

set +e
"$@"
status=$?
set -e
exit $status
