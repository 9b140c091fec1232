#!/usr/bin/env bash
# Starts Queue: a private MariaDB under .queue/ (installed and initialised on first use), then Api, Admin and Scheduler.
# Ctrl-C or SIGTERM stops all of them and the database cleanly.
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

echo "Building (Release)..."
dotnet build Queue.slnx -c Release -nologo -v quiet -clp:ErrorsOnly >/dev/null
BIN() { echo "$ROOT/$1/bin/Release/net10.0/$1.dll"; }

pids=()
stop_all() {
  trap - INT TERM EXIT
  echo; echo "Stopping services..."
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -z "$external_db" ] && [ -f "$STATE/db/mariadbd.pid" ]; then
    echo "Stopping MariaDB..."
    dbpid=$(cat "$STATE/db/mariadbd.pid")
    kill -TERM "$dbpid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$dbpid" 2>/dev/null || break; sleep 0.1; done
  fi
  echo "Stopped."
  exit 0
}
trap stop_all INT TERM EXIT

# The services never start a database themselves: the private server (started or reused; it outlives this script
# until stop_all) comes from the development-only Queue.Local, then the first command applies the migrations.
if [ -z "$external_db" ]; then
  # To a file, not $(...): the server inherits the command's stdout, and a pipe would stay open as long as it runs.
  dotnet "$(BIN Queue.Local)" start-db --dir "$STATE/db" --port 5306 --database queue > "$STATE/db.connection"
  ConnectionStrings__Queue=$(cat "$STATE/db.connection")
  export ConnectionStrings__Queue
fi
dotnet "$(BIN Queue.Admin)" migrate

if [ ! -f "$STATE/demo.env" ]; then
  echo "First run: creating the demo tenants, keys and technician..."
  admin() { dotnet "$(BIN Queue.Admin)" "$@"; }
  admin create-tenant acme --tasks text,thumbnail --if-missing >/dev/null
  admin create-tenant globex --tasks text,thumbnail --if-missing >/dev/null
  key_a=$(admin create-key --role customer --tenant acme --label demo)
  key_b=$(admin create-key --role customer --tenant globex --label demo)
  key_w=$(admin create-key --role worker --label demo)
  password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 20)
  admin create-technician tech "$password" >/dev/null
  umask 077
  cat > "$STATE/demo.env" <<ENV
QUEUE_URL=$API_URL
QUEUE_ADMIN_URL=$ADMIN_URL
QUEUE_CUSTOMER_KEY=$key_a
QUEUE_CUSTOMER_KEY_B=$key_b
QUEUE_WORKER_KEY=$key_w
QUEUE_ADMIN_USER=tech
QUEUE_ADMIN_PASSWORD=$password
ENV
  chmod 600 "$STATE/demo.env"
fi

mkdir -p "$STATE/logs"
# A 2 MB gen0 budget instead of one sized from the L3 cache keeps each service's RSS down (README "Memory"); the runtime
# reads this knob only from the environment.
export DOTNET_GCgen0size=${DOTNET_GCgen0size:-0x200000}
start() { # name url
  local name=$1 url=$2
  ASPNETCORE_URLS=$url dotnet "$(BIN "$name")" --contentRoot "$ROOT/$name/bin/Release/net10.0" > >(tee "$STATE/logs/$name.log" | sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
}
start Queue.Api "$API_URL"
# The Admin's cookies are HTTPS-only unless told otherwise; this one-machine setup serves plain HTTP on 127.0.0.1.
Admin__AllowHttp=true start Queue.Admin "$ADMIN_URL"
start Queue.Scheduler "$SCHED_URL"

healthy() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }
for svc in "Queue.Api $API_URL/healthz" "Queue.Admin $ADMIN_URL/healthz" "Queue.Scheduler $SCHED_URL/healthz"; do
  set -- $svc
  ok=""
  for _ in $(seq 1 600); do healthy "$2" && { ok=1; break; }; sleep 0.1; done
  if [ -z "$ok" ]; then
    echo "$1 did not become healthy at $2; the last lines of its log (.queue/logs/$1.log):" >&2
    tail -n 20 "$STATE/logs/$1.log" >&2 || true
    exit 1
  fi
done

set -a; . "$STATE/demo.env"; set +a
cat <<MSG

Queue is running.
  Api        $QUEUE_URL          (OpenAPI: $QUEUE_URL/openapi/v1.json)
  Admin      $QUEUE_ADMIN_URL    login: $QUEUE_ADMIN_USER / $QUEUE_ADMIN_PASSWORD
  Scheduler  $SCHED_URL/healthz  (ordering policy: ${Ordering__Policy:-seed}, period: ${Ordering__Period:-01:00:00})
  Keys       customer (acme)   $QUEUE_CUSTOMER_KEY
             customer (globex) $QUEUE_CUSTOMER_KEY_B
             worker            $QUEUE_WORKER_KEY
  All of the above is in .queue/demo.env (source it from scripts). Ctrl-C stops everything.
  Fair shares between tenants: restart as  Ordering__Policy=tenant-fair ./run.sh
  Why is a job where it is:  curl -H "Authorization: Bearer \$QUEUE_CUSTOMER_KEY" $QUEUE_URL/jobs/ID/explain

MSG
# Run until Ctrl-C, or until any service exits on its own (then stop the rest rather than limp on).
while :; do
  for p in "${pids[@]}"; do
    if ! kill -0 "$p" 2>/dev/null; then echo "A service (pid $p) exited; stopping Queue." >&2; exit 1; fi
  done
  sleep 1
done
