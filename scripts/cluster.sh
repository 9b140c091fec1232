#!/usr/bin/env bash
# Starts Queue as a cluster on this machine (README "Cluster"): a MariaDB primary and its GTID replica under
# .queue/cluster/, 3 Queue.Api, 2 Queue.Scheduler and 1 Queue.Admin behind HAProxy, which serves the Api on
# $QUEUE_URL (5080) and the Admin on 5081, as ./run.sh does. Writes .queue/demo.env. A process that exits is restarted
# with backoff while the balancer serves through the others (scripts/services.sh watch_all); Ctrl-C or TERM stops
# everything it started.
# ./run.sh stays the one-box default; both keep their own database, so their data never mix.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=$ROOT/.queue
CLUSTER=$STATE/cluster
mkdir -p "$CLUSTER"

BALANCER=${QUEUE_CLUSTER_HOST:-127.0.0.1}
API_URL=http://$BALANCER:${QUEUE_CLUSTER_API_PORT:-5080}
ADMIN_URL=http://$BALANCER:${QUEUE_CLUSTER_ADMIN_PORT:-5081}
API_PORTS=(5090 5091 5092)
ADMIN_PORT=5093
SCHED_PORTS=(5082 5083)

scripts/ensure-packages.sh mariadb haproxy
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)

. "$ROOT/scripts/services.sh"
build_release
trap stop_all INT TERM EXIT

# The primary and the replica (MariaDB's own GTID replication); line 1 is the primary's connection string, line 2 the
# replica's. To a file, not $(...): the servers inherit the command's stdout.
dotnet "$(BIN Queue.Local)" start-cluster-db --dir "$CLUSTER/primary" --port 5316 --replica-dir "$CLUSTER/replica" --replica-port 5317 \
  --database queue > "$CLUSTER/db.connection"
db_pidfiles+=("$CLUSTER/primary/mariadbd.pid" "$CLUSTER/replica/mariadbd.pid")
ConnectionStrings__Queue=$(sed -n 1p "$CLUSTER/db.connection")
ConnectionStrings__QueueRead=$(sed -n 2p "$CLUSTER/db.connection")
export ConnectionStrings__Queue ConnectionStrings__QueueRead
dotnet "$(BIN Queue.Admin)" migrate
ensure_demo_env "$CLUSTER" "$API_URL" "$ADMIN_URL"

cat > "$CLUSTER/haproxy.cfg" <<CFG
# Written by scripts/cluster.sh. Round robin over the Api processes, each checked every second on /healthz; a
# connection refused by a dead one is retried on another.
global
  maxconn 8192
defaults
  mode http
  option http-keep-alive
  timeout connect 2s
  timeout client 120s
  timeout server 70s   # a long-poll waits up to 30 s, plus the request timeout
  retries 2
  option redispatch
  retry-on conn-failure empty-response
frontend api
  bind $BALANCER:${QUEUE_CLUSTER_API_PORT:-5080}
  default_backend api
frontend admin
  bind $BALANCER:${QUEUE_CLUSTER_ADMIN_PORT:-5081}
  default_backend admin
backend api
  balance roundrobin
  option httpchk GET /healthz
  default-server check inter 1s fall 2 rise 1
$(for i in "${!API_PORTS[@]}"; do echo "  server api$((i + 1)) 127.0.0.1:${API_PORTS[$i]}"; done)
backend admin
  option httpchk GET /healthz
  server admin1 127.0.0.1:$ADMIN_PORT check inter 1s
CFG

export DOTNET_GCgen0size=${DOTNET_GCgen0size:-0x200000}
export DOTNET_GCRegionSize=${DOTNET_GCRegionSize:-0x100000}
health=()
for i in "${!API_PORTS[@]}"; do
  start_api "http://127.0.0.1:${API_PORTS[$i]}" "Queue.Api-$((i + 1))"
  health+=("Queue.Api-$((i + 1)) http://127.0.0.1:${API_PORTS[$i]}/healthz")
done
Admin__AllowHttp=true start Queue.Admin "http://127.0.0.1:$ADMIN_PORT"
health+=("Queue.Admin http://127.0.0.1:$ADMIN_PORT/healthz")
for i in "${!SCHED_PORTS[@]}"; do
  start Queue.Scheduler "http://127.0.0.1:${SCHED_PORTS[$i]}" "Queue.Scheduler-$((i + 1))"
  health+=("Queue.Scheduler-$((i + 1)) http://127.0.0.1:${SCHED_PORTS[$i]}/healthz")
done
wait_healthy "${health[@]}"
start_other haproxy "$HAPROXY" -db -f "$CLUSTER/haproxy.cfg"
wait_healthy "haproxy $API_URL/healthz" "haproxy $ADMIN_URL/healthz"

set -a; . "$STATE/demo.env"; set +a
cat <<MSG

Queue is running as a cluster.
  Api        $QUEUE_URL   (HAProxy, round robin over 127.0.0.1:${API_PORTS[*]})
  Admin      $QUEUE_ADMIN_URL   login: $QUEUE_ADMIN_USER / $QUEUE_ADMIN_PASSWORD
  Schedulers 127.0.0.1:${SCHED_PORTS[*]} (Quartz cluster: one rewrite per period)
  Database   primary 127.0.0.1:5316, replica 127.0.0.1:5317 (GTID; lists, charts and metrics read from it)
  Keys       customer (acme)   $QUEUE_CUSTOMER_KEY
             customer (globex) $QUEUE_CUSTOMER_KEY_B
             worker            $QUEUE_WORKER_KEY
  All of the above is in .queue/demo.env. Ctrl-C stops everything.

MSG
watch_all
