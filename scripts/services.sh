# Shared by ./run.sh and scripts/cluster.sh (sourced, not run): building, starting services, the demo tenants and keys,
# health checks, and stopping everything that was started. Expects ROOT and STATE to be set.

BIN() { echo "$ROOT/$1/bin/Release/net10.0/$1.dll"; }

build_release() {
  echo "Building (Release)..."
  dotnet build "$ROOT/Queue.slnx" -c Release -nologo -v quiet -clp:ErrorsOnly >/dev/null
}

pids=()
db_pidfiles=()
# Stops the services, then the private databases this script started (their pid files are in db_pidfiles).
stop_all() {
  # A second Ctrl-C (or a TERM that reaches this script twice, as through `timeout`) must not end the script half-way
  # through stopping: the private database, which outlives the script by design, would be left running.
  trap '' INT TERM
  trap - EXIT
  echo; echo "Stopping services..."
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  # A service gets 20 s to finish what it is doing; one that is still there after that (a Scheduler whose database
  # went first, on a Ctrl-C that reached the database's watchdog too) is killed, so nothing is left running.
  for _ in $(seq 1 200); do
    alive=""
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then echo "pid $p did not stop within 20 s; killing it" >&2; kill -KILL "$p" 2>/dev/null || true; fi
  done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for f in "${db_pidfiles[@]}"; do
    [ -f "$f" ] || continue
    echo "Stopping MariaDB ($f)..."
    dbpid=$(cat "$f")
    kill -TERM "$dbpid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$dbpid" 2>/dev/null || break; sleep 0.1; done
  done
  echo "Stopped."
  exit 0
}

# start NAME URL [LOGNAME]: runs one service in the background, its log in .queue/logs and on the terminal.
start() {
  local name=$1 url=$2 log=${3:-$1}
  mkdir -p "$STATE/logs"
  ASPNETCORE_URLS=$url Urls=$url dotnet "$(BIN "$name")" --contentRoot "$ROOT/$name/bin/Release/net10.0" > >(tee "$STATE/logs/$log.log" | sed -u "s/^/[$log] /") 2>&1 &
  pids+=($!)
}

# start_api URL [LOGNAME]: Queue.Api, with the framework's precompiled (ReadyToRun) code turned off, so every method it
# runs is compiled by the JIT at full optimisation instead of running the precompiled code for good (tiered compilation
# is off, README "Memory"): drains about a quarter faster and a smaller RSS. The runtime reads this knob only from the
# environment. The other services keep the precompiled code: they start faster and none of them is on a hot path.
start_api() {
  DOTNET_ReadyToRun=${DOTNET_ReadyToRun:-0} start Queue.Api "$@"
}

# start_other LOGNAME COMMAND...: a non-.NET process (the balancer), logged the same way.
start_other() {
  local log=$1; shift
  mkdir -p "$STATE/logs"
  "$@" > >(tee "$STATE/logs/$log.log" | sed -u "s/^/[$log] /") 2>&1 &
  pids+=($!)
}

healthy() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }

# wait_healthy "NAME URL" ...: each URL answers 2xx within a minute, or the script stops with the log's tail.
wait_healthy() {
  for svc in "$@"; do
    set -- $svc
    local ok=""
    for _ in $(seq 1 600); do healthy "$2" && { ok=1; break; }; sleep 0.1; done
    if [ -z "$ok" ]; then
      echo "$1 did not become healthy at $2; the last lines of its log (.queue/logs/$1.log):" >&2
      tail -n 20 "$STATE/logs/$1.log" >&2 || true
      exit 1
    fi
  done
}

# ensure_demo_env DB_STATE API_URL ADMIN_URL: the demo tenants, keys and technician of the database whose state lives in
# DB_STATE (created there on its first use, as DB_STATE/demo.env), copied to .queue/demo.env with the addresses of the
# way Queue was started now (one box or cluster), so scripts always source the one file.
ensure_demo_env() {
  local db_state=$1 api_url=$2 admin_url=$3
  mkdir -p "$db_state"
  if [ ! -f "$db_state/demo.env" ]; then
    echo "First run on this database: creating the demo tenants, keys and technician..."
    admin() { dotnet "$(BIN Queue.Admin)" "$@"; }
    admin create-tenant acme --tasks text,thumbnail --if-missing >/dev/null
    admin create-tenant globex --tasks text,thumbnail --if-missing >/dev/null
    local key_a key_b key_w password
    key_a=$(admin create-key --role customer --tenant acme --label demo)
    key_b=$(admin create-key --role customer --tenant globex --label demo)
    key_w=$(admin create-key --role worker --label demo)
    password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 20)
    admin create-technician tech "$password" >/dev/null
    (
      umask 077
      cat > "$db_state/demo.env" <<ENV
QUEUE_CUSTOMER_KEY=$key_a
QUEUE_CUSTOMER_KEY_B=$key_b
QUEUE_WORKER_KEY=$key_w
QUEUE_ADMIN_USER=tech
QUEUE_ADMIN_PASSWORD=$password
ENV
    )
  fi
  (
    umask 077
    { echo "QUEUE_URL=$api_url"; echo "QUEUE_ADMIN_URL=$admin_url"; cat "$db_state/demo.env"; } > "$STATE/demo.env"
  )
  chmod 600 "$STATE/demo.env" "$db_state/demo.env"
}

# Runs until Ctrl-C, or until any started process exits on its own (then stops the rest rather than limp on).
watch_all() {
  while :; do
    for p in "${pids[@]}"; do
      # An exited child stays a zombie (kill -0 still succeeds) until it is waited for: look at its state too.
      if ! kill -0 "$p" 2>/dev/null || [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" = Z ]; then
        echo "A process (pid $p) exited; stopping Queue." >&2; exit 1
      fi
    done
    sleep 1
  done
}
