#!/usr/bin/env bash
# Starts Queue: a private MariaDB under .queue/ (installed and initialised on first use), then Api, Admin and Scheduler.
# A service that exits is restarted with backoff; the database dying stops everything (scripts/services.sh watch_all
# says why). Ctrl-C or SIGTERM stops all of them and the database cleanly.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
STATE=$ROOT/.queue
mkdir -p "$STATE"

API_URL=${QUEUE_API_URL:-http://127.0.0.1:5080}
ADMIN_URL=${QUEUE_ADMIN_URL_BIND:-http://127.0.0.1:5081}
SCHED_URL=${QUEUE_SCHEDULER_URL:-http://127.0.0.1:5082}

external_db=""
if [ -n "${ConnectionStrings__Queue:-}" ] || [ -n "${QUEUE_DB:-}" ]; then
  external_db=1
else
  scripts/ensure-packages.sh mariadb
fi

. "$ROOT/scripts/services.sh"
# A second ./run.sh next to a running one would fail on the ports, and its exit would then stop the database the first
# one is using: refuse before touching anything.
for url in "$API_URL" "$ADMIN_URL" "$SCHED_URL"; do
  hostport=${url#*://}
  if (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null; then
    echo "run.sh: $url is already in use: is Queue already running? Stop it (Ctrl-C in its terminal) first." >&2
    trap - EXIT
    exit 1
  fi
done
build_release
trap stop_all INT TERM EXIT

# The services never start a database themselves: the private server (started or reused; it outlives this script
# until stop_all) comes from the development-only Queue.Local, then the first command applies the migrations.
if [ -z "$external_db" ]; then
  # To a file, not $(...): the server inherits the command's stdout, and a pipe would stay open as long as it runs.
  dotnet "$(BIN Queue.Local)" start-db --dir "$STATE/db" --port 5306 --database queue > "$STATE/db.connection"
  ConnectionStrings__Queue=$(cat "$STATE/db.connection")
  export ConnectionStrings__Queue
  db_pidfiles+=("$STATE/db/mariadbd.pid")
  stop_if_db_exits=1
fi
dotnet "$(BIN Queue.Admin)" migrate

ensure_demo_env "$STATE/${external_db:+external-}db" "$API_URL" "$ADMIN_URL"

# A 2 MB gen0 budget instead of one sized from the L3 cache, and 1 MB GC regions instead of 4 MB, keep each service's
# RSS down (README "Memory"); the runtime reads these knobs only from the environment.
export DOTNET_GCgen0size=${DOTNET_GCgen0size:-0x200000}
export DOTNET_GCRegionSize=${DOTNET_GCRegionSize:-0x100000}
start_api "$API_URL"
# The Admin's cookies are HTTPS-only unless told otherwise; this one-machine setup serves plain HTTP on 127.0.0.1.
Admin__AllowHttp=true start Queue.Admin "$ADMIN_URL"
start Queue.Scheduler "$SCHED_URL"

wait_healthy "Queue.Api $API_URL/healthz" "Queue.Admin $ADMIN_URL/healthz" "Queue.Scheduler $SCHED_URL/healthz"

set -a; . "$STATE/demo.env"; set +a
cat <<MSG

Queue is running.
  Api        $QUEUE_URL          (OpenAPI: $QUEUE_URL/openapi/v1.json)
  Admin      $QUEUE_ADMIN_URL    login: $QUEUE_ADMIN_USER / $QUEUE_ADMIN_PASSWORD
  Scheduler  $SCHED_URL/healthz  (ordering policy: ${Ordering__Policy:-tenant-fair}, period: ${Ordering__Period:-01:00:00})
  Keys       customer (acme)   $QUEUE_CUSTOMER_KEY
             customer (globex) $QUEUE_CUSTOMER_KEY_B
             worker            $QUEUE_WORKER_KEY
  All of the above is in .queue/demo.env (source it from scripts). Ctrl-C stops everything.
  One order for all tenants (no shares by weight): restart as  Ordering__Policy=seed ./run.sh
  Why is a job where it is:  curl -H "Authorization: Bearer \$QUEUE_CUSTOMER_KEY" $QUEUE_URL/jobs/ID/explain

MSG
watch_all
