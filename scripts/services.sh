# Shared by ./run.sh and scripts/cluster.sh (sourced, not run): building, starting services, the demo tenants and keys,
# health checks, and stopping everything that was started. Expects ROOT and STATE to be set.

BIN() { echo "$ROOT/$1/bin/Release/net10.0/$1.dll"; }

build_release() {
  echo "Building (Release)..."
  dotnet build "$ROOT/Queue.slnx" -c Release -nologo -v quiet -clp:ErrorsOnly >/dev/null
}

# The supervised services, one index each: log name, command (quoted for eval), the exported environment it was first
# started in (a caller's VAR=value prefix included, so a restart gets the same settings), current pid ("" while it waits
# to be restarted), when it was last started, its next backoff, when it is due again, and how often it was restarted.
svc_names=() svc_cmds=() svc_envs=() pids=() svc_started=() svc_delay=() svc_due=() svc_restarts=()
db_pidfiles=()
# Set by ./run.sh: its private database dying stops everything (watch_all says why).
stop_if_db_exits=""
# Stops the services (the pids they run as now, restarted ones included), then the private databases this script
# started (their pid files are in db_pidfiles).
stop_all() {
  # A second Ctrl-C (or a TERM that reaches this script twice, as through `timeout`) must not end the script half-way
  # through stopping: the private database, which outlives the script by design, would be left running.
  trap '' INT TERM
  trap - EXIT
  echo; echo "Stopping services..."
  for p in "${pids[@]}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true; done
  # A service gets 20 s to finish what it is doing; one that is still there after that (a Scheduler whose database
  # went first, on a Ctrl-C that reached the database's watchdog too) is killed, so nothing is left running.
  for _ in $(seq 1 200); do
    alive=""
    for p in "${pids[@]}"; do [ -n "$p" ] && kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then echo "pid $p did not stop within 20 s; killing it" >&2; kill -KILL "$p" 2>/dev/null || true; fi
  done
  for p in "${pids[@]}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
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

# supervise LOGNAME COMMAND...: runs COMMAND in the background, its log in .queue/logs and on the terminal, and has
# watch_all restart it whenever it exits. Expects `trap stop_all INT TERM EXIT` to be set already.
supervise() {
  local log=$1; shift
  local i=${#svc_names[@]} cmd
  printf -v cmd '%q ' "$@"
  svc_names[i]=$log svc_cmds[i]=$cmd svc_envs[i]=$(export -p) svc_delay[i]=1 svc_due[i]=0 svc_restarts[i]=0
  mkdir -p "$STATE/logs"
  : > "$STATE/logs/$log.log"
  launch "$i"
}

# launch INDEX: (re)starts service INDEX, adding to its log. A Ctrl-C or TERM that landed between the fork and the pid
# being recorded would have stop_all miss the new process and leave it running: it is held until the pid is in pids.
launch() {
  local i=$1 log=${svc_names[$1]} stop_requested=""
  trap 'stop_requested=1' INT TERM
  # The subshell execs the command, so the pid recorded is the service's own. Readonly variables in the saved
  # environment fail to be declared again; they have the same value already, hence set +e and no stderr.
  (set +e; eval "${svc_envs[i]}" 2>/dev/null; eval "exec ${svc_cmds[i]}") \
    > >(tee -a "$STATE/logs/$log.log" | sed -u "s/^/[$log] /") 2>&1 &
  pids[i]=$!
  svc_started[i]=$SECONDS
  trap stop_all INT TERM
  [ -z "$stop_requested" ] || stop_all
}

# exited PID: the process is gone, or a zombie (an exited child stays one, and kill -0 still succeeds on it, until it
# is waited for). Reads /proc instead of running ps: this runs twice a second for every service.
exited() {
  local stat
  kill -0 "$1" 2>/dev/null || return 0
  read -r stat 2>/dev/null < "/proc/$1/stat" || return 0
  stat=${stat##*) }
  [ "${stat%% *}" = Z ]
}

# start NAME URL [LOGNAME]: runs one service under the supervisor, its log in .queue/logs and on the terminal.
start() {
  local name=$1 url=$2 log=${3:-$1}
  ASPNETCORE_URLS=$url Urls=$url supervise "$log" dotnet "$(BIN "$name")" --contentRoot "$ROOT/$name/bin/Release/net10.0"
}

# start_api URL [LOGNAME]: Queue.Api, with the framework's precompiled (ReadyToRun) code turned off, so every method it
# runs is compiled by the JIT at full optimisation instead of running the precompiled code for good (tiered compilation
# is off, README "Memory"): drains about a quarter faster and a smaller RSS. The runtime reads this knob only from the
# environment. The other services keep the precompiled code: they start faster and none of them is on a hot path.
# Socket completions run on the socket engine's own threads (DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS=1, also
# environment only) instead of each hopping to the thread pool: the Api's CPU per enqueued job about a tenth lower,
# one-per-call enqueue about 7 % faster (docs/DESIGN.md "Socket completions inline"). Kestrel still runs each request
# on the thread pool, so a large request body is never parsed on an engine thread.
start_api() {
  DOTNET_ReadyToRun=${DOTNET_ReadyToRun:-0} \
    DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS=${DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS:-1} start Queue.Api "$@"
}

# start_other LOGNAME COMMAND...: a non-.NET process (the balancer), logged and supervised the same way.
start_other() {
  supervise "$@"
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

# Supervises until Ctrl-C or TERM (stop_all): a service that exits is restarted after a backoff of 1 s, doubling up to
# 30 s while it keeps failing, and back to 1 s once a run has lasted 60 s. Meanwhile the others keep serving (in the
# cluster HAProxy checks every Api each second and sends requests only to live ones). Everything happens here, in the
# script's one shell, between two signal checks, so a restart and stop_all never run at once.
#
# The MariaDB servers are not supervised: Queue.Local starts them in a session of their own, with a watchdog shell of
# their own, so they outlive this script until stop_all and are not its children. In the cluster the services ride out
# their absence (without the replica reads go to the primary; without the primary requests get 503 until it is back);
# stopping and starting scripts/cluster.sh starts them again. For ./run.sh (stop_if_db_exits) the private database
# dying stops everything instead: nothing works without it, restarting it here would hide why it stopped (a full disk,
# a crash in its log), and every request would get 503 until someone noticed.
watch_all() {
  local i p status how ran delay f dbpid
  while :; do
    for i in "${!pids[@]}"; do
      p=${pids[i]}
      if [ -n "$p" ]; then
        exited "$p" || continue
        status=0; wait "$p" 2>/dev/null || status=$?
        ran=$((SECONDS - svc_started[i]))
        [ "$ran" -lt 60 ] || svc_delay[i]=1
        delay=${svc_delay[i]}
        svc_restarts[i]=$((svc_restarts[i] + 1))
        svc_due[i]=$((SECONDS + delay))
        svc_delay[i]=$((delay * 2 > 30 ? 30 : delay * 2))
        pids[i]=""
        how=""
        [ "$status" -le 128 ] || how=" (signal $((status - 128)))"
        echo "[supervisor] ${svc_names[i]} (pid $p) exited with status $status$how after $ran s; restarting in $delay s (restart ${svc_restarts[i]})" >&2
      elif [ "$SECONDS" -ge "${svc_due[i]}" ]; then
        launch "$i"
        echo "[supervisor] ${svc_names[i]} restarted as pid ${pids[i]}" >&2
      fi
    done
    if [ -n "$stop_if_db_exits" ]; then
      for f in "${db_pidfiles[@]}"; do
        dbpid=""
        [ -f "$f" ] && read -r dbpid < "$f" || true
        if [ -z "$dbpid" ] || ! kill -0 "$dbpid" 2>/dev/null; then
          echo "The private database ($f) is gone; stopping Queue. The end of its log:" >&2
          tail -n 20 "$(dirname "$f")/mariadbd.err" >&2 || true
          exit 1
        fi
      done
    fi
    # In braces: bash reports a child killed by a signal (kill -9) on stderr once the next foreground command ends, in
    # a line of its own that the supervisor's line above says better.
    { sleep 0.5; } 2>/dev/null
  done
}
