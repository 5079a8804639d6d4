#!/usr/bin/env bash
# Start a throw-away PostgreSQL server on 127.0.0.1 for the test suite; print its admin URL.
# Uses the distribution's packages (installs them when missing). Usage: eval "$(.ci/postgres.sh)"
set -euo pipefail
PORT="${LEDGER_PG_PORT:-55432}"
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >&2
  else
    echo "postgres.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1
  fi
fi
BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
DATA="$(mktemp -d /tmp/ledger-pg.XXXXXX)"
RUN_AS=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$DATA"
  RUN_AS=(runuser -u postgres --)
fi
"${RUN_AS[@]}" "$BIN/initdb" -D "$DATA/data" -U ledger --auth=trust -E UTF8 >/dev/null
"${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DATA/data" -l "$DATA/log" -w \
  -o "-p $PORT -c listen_addresses=127.0.0.1 -k $DATA -c max_connections=200 -c fsync=off" start >/dev/null
echo "export LEDGER_TEST_PG=postgresql+psycopg://ledger@127.0.0.1:$PORT/postgres"
echo "export LEDGER_PG_DATA=$DATA"
