#!/usr/bin/env bash
# A Spark standalone cluster on 127.0.0.1 from the installed pyspark: one master and two workers
# with one core and 1g each (enough to prove the job on a real cluster; not for speed).
#
#   scripts/cluster.sh up       start it; waits until the master is leader and every worker is
#                               registered, then prints the master URL (spark://127.0.0.1:PORT)
#   scripts/cluster.sh status   PIDs, ports and liveness; exit 0 only if everything is up
#   scripts/cluster.sh down     stop workers, then the master, by recorded PID (SIGTERM, SIGKILL
#                               after a grace period), and the executor JVMs and Python workers
#                               they had started
#   scripts/cluster.sh url      print the master URL of the running cluster
#
# Environment:
#   CLUSTER_DIR            state dir: PIDs, ports, logs, work dirs (default /tmp/bleu-spark-cluster)
#   PYTHON                 python whose pyspark provides SPARK_HOME (default: .venv/bin/python of
#                          the repo, else python3)
#   CLUSTER_WORKERS        number of workers (default 2)
#   CLUSTER_WORKER_CORES   cores per worker (default 1)
#   CLUSTER_WORKER_MEMORY  memory per worker for executors (default 1g; executors default to 1g)
#   CLUSTER_TIMEOUT        seconds `up` waits for the cluster to be ready (default 90)
#   CLUSTER_GRACE          seconds `down` waits after SIGTERM before SIGKILL (default 10)
#   CLUSTER_MASTER_PORT    ask for this master port instead of a free one (Spark moves up if busy)
#
# Everything binds to 127.0.0.1 only: SPARK_LOCAL_IP=127.0.0.1 and --host 127.0.0.1 for the
# daemons (and through them their web UIs and the executors), and the master's REST submission
# server is disabled. Ports are picked free at start; if one is taken meanwhile, Spark moves to
# the next one, and the ports actually bound are read back from the logs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${CLUSTER_DIR:-/tmp/bleu-spark-cluster}"
WORKERS="${CLUSTER_WORKERS:-2}"
CORES="${CLUSTER_WORKER_CORES:-1}"
MEMORY="${CLUSTER_WORKER_MEMORY:-1g}"
TIMEOUT="${CLUSTER_TIMEOUT:-90}"
GRACE="${CLUSTER_GRACE:-10}"
MASTER_CLASS=org.apache.spark.deploy.master.Master
WORKER_CLASS=org.apache.spark.deploy.worker.Worker

say() { printf 'cluster.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

python_bin() {
  if [[ -n "${PYTHON:-}" ]]; then echo "$PYTHON"
  elif [[ -x "$ROOT/.venv/bin/python" ]]; then echo "$ROOT/.venv/bin/python"
  else command -v python3
  fi
}

spark_home() {
  "$(python_bin)" -c 'import os, pyspark; print(os.path.dirname(os.path.realpath(pyspark.__file__)))' \
    || die "no pyspark in $(python_bin); set PYTHON to a python that has it"
}

# N distinct free TCP ports on 127.0.0.1 (all sockets held open together so they differ).
free_ports() {
  "$(python_bin)" - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
}

alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

# True if PID is alive and still the JVM we started (guards against PID reuse).
is_ours() {
  local pid="$1" class="$2"
  alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$class"
}

# All descendants of a PID (children first-level first), from one ps snapshot.
descendants() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { kids[$2] = kids[$2] " " $1 }
    END {
      n = split(kids[root], queue, " ")
      for (i = 1; i <= n; i++) {
        print queue[i]
        m = split(kids[queue[i]], more, " ")
        for (j = 1; j <= m; j++) queue[++n] = more[j]
      }
    }'
}

# SIGTERM the given PIDs, wait up to GRACE seconds, SIGKILL whatever is left.
terminate() {
  local pids=() p
  for p in "$@"; do alive "$p" && pids+=("$p"); done
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  local deadline=$((SECONDS + GRACE))
  while ((SECONDS < deadline)); do
    local left=()
    for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
    ((${#left[@]})) || return 0
    sleep 0.2
  done
  for p in "${pids[@]}"; do
    if alive "$p"; then say "PID $p did not stop within ${GRACE}s; SIGKILL"; kill -KILL "$p" 2>/dev/null || true; fi
  done
  sleep 0.2
}

# Processes (other than this shell and its ancestors) whose working directory is one of the
# workers' work dirs: executors and their Python workers, even if orphaned by a dead worker.
stray_in_work_dirs() {
  local keep=" $$ " p=$$ d pid cwd
  while [[ "$p" -gt 1 ]]; do
    p="$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')"; [[ -n "$p" ]] || break; keep+="$p "
  done
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    [[ "$keep" == *" $pid "* ]] && continue
    cwd="$(readlink "$d/cwd" 2>/dev/null)" || continue
    [[ "$cwd" == "$STATE"/work-* ]] && echo "$pid"
  done
}

read_pid() { [[ -f "$STATE/$1.pid" ]] && cat "$STATE/$1.pid" || true; }

# Launch a Spark daemon in its own session with cwd = state dir; prints the JVM's PID
# (spark-class ends in `exec java`, and setsid does not fork here, so $! is the JVM).
launch() {
  local name="$1"; shift
  (
    cd "$STATE"
    exec setsid env SPARK_HOME="$SPARK_HOME" SPARK_CONF_DIR="$STATE/conf" \
      SPARK_LOCAL_IP=127.0.0.1 \
      SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false" \
      SPARK_DAEMON_MEMORY="${SPARK_DAEMON_MEMORY:-512m}" \
      "$SPARK_HOME/bin/spark-class" "$@" </dev/null >"$STATE/$name.log" 2>&1
  ) &
  echo $! >"$STATE/$name.pid"
}

wait_for() {  # wait_for NAME PATTERN DEADLINE
  local name="$1" pattern="$2" deadline="$3" pid
  pid="$(read_pid "$name")"
  while ! grep -q -- "$pattern" "$STATE/$name.log" 2>/dev/null; do
    if ! alive "$pid"; then
      say "$name (PID $pid) exited before it was ready; last lines of $STATE/$name.log:"
      tail -n 30 "$STATE/$name.log" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      say "timed out after ${TIMEOUT}s waiting for $name to log '$pattern'; last lines of $STATE/$name.log:"
      tail -n 30 "$STATE/$name.log" >&2 || true
      return 1
    fi
    sleep 0.25
  done
}

cmd_status() {
  local ok=0 name pid class c
  [[ -f "$STATE/master.url" ]] && echo "master URL: $(cat "$STATE/master.url")"
  for name in master $(seq -f 'worker-%g' 1 "$WORKERS"); do
    pid="$(read_pid "$name")"
    class=$WORKER_CLASS; [[ $name == master ]] && class=$MASTER_CLASS
    if [[ -z "$pid" ]]; then echo "$name: not started"; ok=1
    elif is_ours "$pid" "$class"; then
      echo "$name: running, PID $pid, log $STATE/$name.log"
      if [[ $name != master ]]; then
        for c in $(descendants "$pid"); do
          if tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null | grep -q CoarseGrainedExecutorBackend; then
            echo "  executor JVM PID $c"
          fi
        done
      fi
    else echo "$name: not running (recorded PID $pid)"; ok=1
    fi
  done
  [[ -f "$STATE/ports" ]] && echo "ports: $(tr '\n' ' ' <"$STATE/ports")"
  return $ok
}

running() {
  is_ours "$(read_pid master)" "$MASTER_CLASS" || return 1
  local i
  for i in $(seq 1 "$WORKERS"); do is_ours "$(read_pid "worker-$i")" "$WORKER_CLASS" || return 1; done
}

cmd_down() {
  local i pid kids=() name
  [[ -d "$STATE" ]] || { say "nothing to stop ($STATE does not exist)"; return 0; }
  for ((i = WORKERS; i >= 1; i--)); do
    name="worker-$i"; pid="$(read_pid "$name")"
    if is_ours "$pid" "$WORKER_CLASS"; then
      mapfile -t kids < <(descendants "$pid")
      say "stopping $name (PID $pid${kids[*]:+, children ${kids[*]}})"
      terminate "$pid"
      terminate "${kids[@]}"   # the worker kills its executors on SIGTERM; this is the backstop
    fi
    rm -f "$STATE/$name.pid"
  done
  pid="$(read_pid master)"
  if is_ours "$pid" "$MASTER_CLASS"; then
    say "stopping master (PID $pid)"
    terminate "$pid"
  fi
  rm -f "$STATE/master.pid" "$STATE/master.url" "$STATE/ports"
  mapfile -t kids < <(stray_in_work_dirs)
  if ((${#kids[@]})); then
    say "stopping leftover executor processes ${kids[*]}"
    terminate "${kids[@]}"
  fi
  say "stopped"
}

cmd_up() {
  if running; then
    say "already running"
    cat "$STATE/master.url"
    return 0
  fi
  [[ -d "$STATE" ]] && cmd_down 2>/dev/null
  command -v java >/dev/null || [[ -n "${JAVA_HOME:-}" ]] || die "no java on PATH and no JAVA_HOME"
  SPARK_HOME="$(spark_home)"
  [[ -x "$SPARK_HOME/bin/spark-class" ]] || die "$SPARK_HOME/bin/spark-class not found"

  mkdir -p "$STATE"
  rm -rf "$STATE"/work-* "$STATE"/*.log "$STATE"/conf "$STATE/ports"
  mkdir -p "$STATE/conf"

  local ports master_port master_ui deadline=$((SECONDS + TIMEOUT)) i
  read -r -a ports <<<"$(free_ports $((2 + 2 * WORKERS)))"
  master_port=${CLUSTER_MASTER_PORT:-${ports[0]}}; master_ui=${ports[1]}

  say "starting master on 127.0.0.1:$master_port (SPARK_HOME=$SPARK_HOME)"
  launch master "$MASTER_CLASS" --host 127.0.0.1 --port "$master_port" --webui-port "$master_ui"
  if ! wait_for master "I have been elected leader" "$deadline"; then cmd_down; exit 1; fi
  # The port actually bound (Spark moves to the next one if the picked one got taken).
  local url
  url="$(grep -o 'Starting Spark master at spark://[^ ]*' "$STATE/master.log" | tail -n1 | awk '{print $NF}')"
  [[ -n "$url" ]] || url="spark://127.0.0.1:$master_port"
  {
    echo "master=${url#spark://}"
    echo "master_ui=$(grep -o "'MasterUI' on port [0-9]*" "$STATE/master.log" | awk '{print $NF}')"
  } >"$STATE/ports"

  for i in $(seq 1 "$WORKERS"); do
    mkdir -p "$STATE/work-$i"
    say "starting worker-$i ($CORES core, $MEMORY)"
    launch "worker-$i" "$WORKER_CLASS" "$url" --host 127.0.0.1 \
      --port "${ports[2 * i]}" --webui-port "${ports[2 * i + 1]}" \
      --cores "$CORES" --memory "$MEMORY" --work-dir "$STATE/work-$i"
  done
  for i in $(seq 1 "$WORKERS"); do
    if ! wait_for "worker-$i" "Successfully registered with master" "$deadline"; then cmd_down; exit 1; fi
    echo "worker_$i=$(grep -o "'WorkerUI' on port [0-9]*" "$STATE/worker-$i.log" | awk '{print $NF}')" >>"$STATE/ports"
  done
  echo "$url" >"$STATE/master.url"
  say "ready: master $url, $WORKERS workers, state in $STATE"
  echo "$url"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  url) [[ -f "$STATE/master.url" ]] && running && cat "$STATE/master.url" || die "not running" ;;
  *) echo "usage: $0 up|down|status|url   (state in \$CLUSTER_DIR, default /tmp/bleu-spark-cluster)" >&2; exit 2 ;;
esac
