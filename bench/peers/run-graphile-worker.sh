#!/usr/bin/env bash
# Queue's own peer runner: graphile-worker (pinned in package.json) on a private PostgreSQL under /tmp, default
# durability (fsync and synchronous_commit on), the same workload and RESULT lines as ../shared/peers, which stays the
# outside check of this one. Env knobs: JOBS PRODUCERS BATCH WORKERS ENQ_MAX_S DRAIN_MAX_S.
# Needs Debian's postgresql binaries (not its service) and Node 20 with npm; the npm packages go to /tmp.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$PGBIN/initdb" ] || { echo "postgresql binaries not found: apt-get install -y postgresql" >&2; exit 2; }

deps=${QUEUE_PEERS_NODE:-/tmp/queue-peers-node}
if ! cmp -s "$here/package.json" "$deps/package.json" || [ ! -d "$deps/node_modules/graphile-worker" ]; then
  mkdir -p "$deps" && cp "$here/package.json" "$deps/package.json"
  (cd "$deps" && npm install --no-audit --no-fund --omit=dev >/dev/null)
fi
export NODE_PATH="$deps/node_modules"

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
PGDIR=$(mktemp -d /tmp/queue-peers-pg.XXXXXX)
[ "$(id -u)" = 0 ] && chown postgres: "$PGDIR"
chmod 700 "$PGDIR"
stop() {
  if [ -f "$PGDIR/data/postmaster.pid" ]; then as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true; fi
  rm -rf "$PGDIR"
}
trap stop EXIT
PGPORT=$(node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
as_pg "$PGBIN/initdb" -D "$PGDIR/data" -U postgres --auth=trust -E UTF8 >"$PGDIR/initdb.log" 2>&1 || { cat "$PGDIR/initdb.log" >&2; exit 1; }
# Only non-durability knobs change: connections for 64 workers and the producers, and the socket directory.
as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w -t 60 \
  -o "-p $PGPORT -c listen_addresses=127.0.0.1 -k $PGDIR -c max_connections=300" start >/dev/null || { cat "$PGDIR/server.log" >&2; exit 1; }
export PGPID=$(head -1 "$PGDIR/data/postmaster.pid")
export DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres"
export PG_VERSION=$("$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -Atc "show server_version")
export PG_DURABILITY=$("$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -Atc "select string_agg(name||'='||setting, ' ' order by name) from pg_settings where name in ('fsync','synchronous_commit','full_page_writes')")
echo "postgres $PG_VERSION pid=$PGPID port=$PGPORT ($PG_DURABILITY)" >&2
timeout 1800 node "$here/graphile-worker.js"
