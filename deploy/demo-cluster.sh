#!/usr/bin/env bash
# make demo-cluster: three NATS servers and three agentd processes on this
# machine run examples/cluster.yaml; the executor running the long step is
# killed (kill -9) in the middle of it, and the run finishes on the other
# executor. Everything lives in a temp dir and is stopped at the end.
#
#   a: orchestrator, planner, memory, ui   (the leader)
#   b: executor, orchestrator              (a standby orchestrator)
#   c: executor
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
PLAN=${1:-examples/cluster.yaml}
BASE=${DEMO_PORT_BASE:-24000}   # ports BASE.. BASE+20 on 127.0.0.1

dir=$(mktemp -d -t agentic-cluster.XXXXXX)
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() {
  for _ in $(seq 1 150); do port_open "$1" && return 0; sleep 0.2; done
  echo "nothing listens on 127.0.0.1:$1; logs in $dir"; tail -n 20 "$dir"/*.log; exit 1
}

say "creating the cluster's root in $dir/a (a's data dir); the NATS servers trust it"
"$BIN/agentctl" keys init --dir "$dir/a" >/dev/null

say "starting three nats-server processes (JetStream, sync_interval: always, clustered, operator mode) in $dir"
routes="nats-route://127.0.0.1:$((BASE + 11)), nats-route://127.0.0.1:$((BASE + 12)), nats-route://127.0.0.1:$((BASE + 13))"
urls=""
for i in 1 2 3; do
  cat >"$dir/nats$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:$((BASE + i))
jetstream { store_dir: "$dir/nats$i", sync_interval: always }
cluster { name: agentic-demo, listen: 127.0.0.1:$((BASE + 10 + i)), routes: [$routes] }
include nats$i-auth.conf
CONF
  "$BIN/agentctl" keys nats-config --from "$dir/a" --resolver-dir "$dir/nats$i/jwt" --out "$dir/nats$i-auth.conf" >/dev/null
  "$BIN/nats-server" -c "$dir/nats$i.conf" >"$dir/nats$i.log" 2>&1 &
  pids+=($!)
  urls="${urls:+$urls,}nats://127.0.0.1:$((BASE + i))"
done
for i in 1 2 3; do wait_port $((BASE + i)); done
echo "NATS cluster: $urls"

export NATS_URL="$urls"
export AGENTIC_CREDS="$dir/a/operator.creds"
ctl() { "$BIN/agentctl" "$@"; }

# agentd never runs steps as root unless told to: run as root, the demo
# has its steps run as an unprivileged user, in work directories that user
# may write.
steps_as=()
if [ "$(id -u)" = 0 ]; then
  chmod 755 "$dir"
  steps_as=(--executor-run-as "${DEMO_RUN_AS:-nobody}")
fi

start_agentd() { # name roles gossip-port http-port [flags...]
  local name=$1 roles=$2 gport=$3 hport=$4; shift 4
  mkdir -p "$dir/work-$name" && chmod 1777 "$dir/work-$name"
  "$BIN/agentd" --data "$dir/$name" --name "$name" --roles "$roles" --nats "$urls" "${steps_as[@]}" \
    --http-listen "127.0.0.1:$hport" --gossip-listen "127.0.0.1:$gport" \
    --executor-workdir "$dir/work-$name" --log-format json "$@" 2>"$dir/agentd-$name.log" &
  pids+=($!)
  eval "pid_$name=$!"
}
wait_ready() { # http-port
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3 && head -n1 <&3 | grep -q 200) 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "agentd on :$1 not ready; logs in $dir"; exit 1
}

say "starting agentd a (orchestrator, planner, memory, ui)"
mkdir -p "$dir/work-a" "$dir/work-b" "$dir/work-c"
start_agentd a orchestrator,planner,memory,ui $((BASE + 21)) $((BASE + 31))
wait_ready $((BASE + 31))

say "enrolling b (executor, orchestrator) and c (executor) from a's root"
ctl node enroll b --roles executor,orchestrator --root "$dir/a" --out "$dir/b"
ctl node enroll c --roles executor --root "$dir/a" --out "$dir/c"
start_agentd b executor,orchestrator $((BASE + 22)) $((BASE + 32)) --join 127.0.0.1:$((BASE + 21)) --executor-slots 2
start_agentd c executor $((BASE + 23)) $((BASE + 33)) --join 127.0.0.1:$((BASE + 21)) --executor-slots 2
wait_ready $((BASE + 32))
wait_ready $((BASE + 33))
for _ in $(seq 1 100); do
  if [ "$(ctl node ls | grep -cw alive)" -ge 3 ]; then break; fi
  sleep 0.2
done

say "agentctl node ls"
ctl node ls

say "agentctl goal submit -f $PLAN"
run=$(ctl goal submit -f "$PLAN")
echo "run $run"

victim=""
for _ in $(seq 1 150); do
  # run show's table: STEP STATUS ATTEMPT NODE ...
  victim=$(ctl run show "$run" | awk '$1 == "long" && $2 == "running" { print $4 }')
  [ -n "$victim" ] && break
  sleep 0.2
done
if [ -z "$victim" ]; then echo "step long never ran"; ctl run show "$run"; exit 1; fi
say "step long runs on $victim: kill -9 agentd $victim"
eval "kill -KILL \$pid_$victim"

say "waiting for the run to finish elsewhere"
for _ in $(seq 1 300); do
  status=$(ctl run show "$run" | awk '$1 == "status" && !seen { print $2; seen = 1 }')
  case "$status" in succeeded|failed|cancelled) break ;; esac
  sleep 0.2
done

say "agentctl node ls (after the kill)"
ctl node ls

say "agentctl run show $run"
ctl run show "$run"

say "agentctl audit tail --run $run (membership and reassignment)"
ctl audit tail --run "$run" | grep -E 'task\.(assigned|cancel|finished)|run\.finished' | tail -n 12
ctl audit tail --since 2m | grep -E 'node\.(failed|left|joined)' | tail -n 4 || true

say "agentctl ledger verify"
ctl ledger verify

[ "$status" = succeeded ] || { echo "run ended $status"; exit 1; }
echo
echo "the run finished on the surviving executor"
