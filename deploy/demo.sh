#!/usr/bin/env bash
# The main job: a single-node agentic cluster in a temp dir runs
# examples/hello.yaml end to end, shows the DAG and the ledger, then stops.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
NATS_PORT=${DEMO_NATS_PORT:-14222}
HTTP_PORT=${DEMO_HTTP_PORT:-18080}
PLAN=${1:-examples/hello.yaml}

dir=$(mktemp -d -t agentic-demo.XXXXXX)
log="$dir/agentd.log"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# agentd never runs steps as root unless told to: run as root, the demo
# has its steps run as an unprivileged user, in a work directory that user
# may write.
steps_as=()
if [ "$(id -u)" = 0 ]; then
  user=${DEMO_RUN_AS:-nobody}
  chmod 755 "$dir"
  mkdir -p "$dir/work" && chmod 1777 "$dir/work"
  steps_as=(--executor-run-as "$user" --executor-workdir "$dir/work")
  say "running as root: steps run as $user (--executor-run-as)"
fi

say "starting agentd (all roles, embedded NATS JetStream) in $dir"
"$BIN/agentd" --data "$dir/data" --name demo \
  --nats-listen "127.0.0.1:$NATS_PORT" --http-listen "127.0.0.1:$HTTP_PORT" \
  "${steps_as[@]}" --log-format json 2>"$log" &
pid=$!
cleanup() {
  if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

export NATS_URL="nats://127.0.0.1:$NATS_PORT"
export AGENTIC_CREDS="$dir/data/operator.creds"
ctl() { "$BIN/agentctl" "$@"; }

for i in $(seq 1 100); do
  if [ -f "$AGENTIC_CREDS" ] && ctl version >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "agentd exited:"; cat "$log"; exit 1; fi
  sleep 0.2
done
ctl version

say "agentctl goal submit -f $PLAN --wait"
ctl goal submit -f "$PLAN" --wait

say "agentctl run list"
ctl run list
run=$(ctl run list -o json | grep -o '"id": *"[^"]*"' | head -1 | sed 's/.*"\([^"]*\)"$/\1/')

say "agentctl run show $run"
ctl run show "$run"

say "agentctl run logs $run"
ctl run logs "$run"

say "agentctl audit tail --run $run (last 8 events)"
ctl audit tail --run "$run" | tail -n 8

say "agentctl ledger verify"
ctl ledger verify

say "stopping agentd (SIGTERM drains)"
kill -TERM "$pid"
wait "$pid"
echo "agentd exited cleanly"
