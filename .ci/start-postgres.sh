#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1:${PGPORT:-55432} for the
# tests, as the postgres user (the server refuses to run as root), and prints
# the URL to export as VROOMX_TEST_POSTGRES_URL.
set -euo pipefail
PGPORT="${PGPORT:-55432}"
PGDATA="${PGDATA_DIR:-/tmp/vroomx-pg-$PGPORT}"
if command -v pg_ctl >/dev/null 2>&1; then
  BIN="$(dirname "$(readlink -f "$(command -v pg_ctl)")")"
else
  BIN="$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n 1)")"
fi

as_postgres() {
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi
}

if [ ! -f "$PGDATA/PG_VERSION" ]; then
  rm -rf "$PGDATA"
  mkdir -p "$PGDATA"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$PGDATA"
  as_postgres "'$BIN/initdb' -D '$PGDATA' -U postgres --auth=trust --encoding=UTF8 --no-locale >/dev/null"
fi
# The tests migrate dozens of fresh databases at once, each migration one transaction holding a lock
# per table and index it makes: the lock table is sized for that (max_locks_per_transaction). Each test
# server holds a pool of its own, and a full run has well over a hundred alive at once: at 300
# connections PostgreSQL refused some ("too many clients") and a test waited minutes for its pool.
if ! as_postgres "'$BIN/pg_ctl' -D '$PGDATA' status >/dev/null 2>&1"; then
  # Durability is not needed for throwaway test data; fsync off keeps tests fast.
  as_postgres "'$BIN/pg_ctl' -D '$PGDATA' -l '$PGDATA/server.log' -w -o \"-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=1000 -c max_locks_per_transaction=256\" start >/dev/null"
fi
echo "postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"
