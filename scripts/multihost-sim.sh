#!/usr/bin/env bash
# A multi-host connstorm run simulated on one machine: N load generators, each in its own
# network namespace, joined to one server namespace by veth pairs (10.201.i.1 ↔ 10.201.i.2),
# started with `--segment i/N --start-at T` (T = now + 2 s, one instant for all); their records
# are merged and the merged successes compared with the server's accepts and the server
# namespace's Tcp.PassiveOpens.
#
#   sudo scripts/multihost-sim.sh [N=4] [RATE=2000] [DURATION=3s]
#
# Needs root and iproute2; builds nothing (uses target/release/connstorm). Namespaces and the
# processes it started (by PID) are removed on exit, also on failure or Ctrl-C.
set -euo pipefail

n=${1:-4}
rate=${2:-2000}
duration=${3:-3s}
port=9000
bin=${CONNSTORM:-$(dirname "$0")/../target/release/connstorm}
[ -x "$bin" ] || { echo "multihost-sim: $bin not built: run cargo build --release" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "multihost-sim: needs root (network namespaces)" >&2; exit 2; }

tag=$$
srv=csmh-$tag-srv
out=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for i in $(seq 0 $((n - 1))); do ip netns del "csmh-$tag-l$i" 2>/dev/null || true; done
  ip netns del "$srv" 2>/dev/null || true
  echo "multihost-sim: records kept in $out" >&2
}
trap cleanup EXIT

passive() { ip netns exec "$srv" awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else print $c["PassiveOpens"] }' /proc/net/snmp; }

ip netns add "$srv"
ip -n "$srv" link set lo up
for i in $(seq 0 $((n - 1))); do
  ns=csmh-$tag-l$i
  ip netns add "$ns"
  ip link add "cm${tag}s$i" netns "$srv" type veth peer name "cm${tag}l$i" netns "$ns"
  ip -n "$srv" addr add "10.201.$i.1/30" dev "cm${tag}s$i"
  ip -n "$ns" addr add "10.201.$i.2/30" dev "cm${tag}l$i"
  ip -n "$srv" link set "cm${tag}s$i" up
  ip -n "$ns" link set "cm${tag}l$i" up
  ip -n "$ns" link set lo up
done

ip netns exec "$srv" "$bin" server --listen "0.0.0.0:$port" --engine epoll --format json \
  --duration 120s --out "$out/server" >"$out/server.json" 2>"$out/server.err" &
srv_pid=$!
pids+=("$srv_pid")
for _ in $(seq 100); do
  ip netns exec "$srv" ss -Hltn "sport = :$port" | grep -q LISTEN && break
  sleep 0.1
done
before=$(passive)

# One instant for every generator (`+2s` given to each would count from each one's own start).
start=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%S.%3NZ)
load_pids=()
for i in $(seq 0 $((n - 1))); do
  ip netns exec "csmh-$tag-l$i" "$bin" load --target "10.201.$i.1:$port" --rate "$rate/s" \
    --segment "$i/$n" --start-at "$start" --warmup 0s --duration "$duration" --connect-timeout 1s \
    --out "$out/seg$i" >"$out/load$i.txt" 2>"$out/load$i.err" &
  load_pids+=($!)
  pids+=($!)
done
for p in "${load_pids[@]}"; do wait "$p"; done
kill -INT "$srv_pid"
wait "$srv_pid"
after=$(passive)

"$bin" merge "$out"/seg*/*.json "$out"/server/*.json -o "$out/merged.json"
"$bin" report "$out/merged.json"
accepted=$(sed -n 's/.*"accepted": *\([0-9]*\).*/\1/p' "$out/server.json" | awk '{ s += $1 } END { print s }')
successes=$(sed -n 's/^ *"successes": *\([0-9]*\).*/\1/p' "$out/merged.json" | head -1)
echo "multihost-sim: merged successes $successes, server accepted $accepted, server Tcp.PassiveOpens +$((after - before))"
[ "$successes" = "$accepted" ] && [ "$accepted" = "$((after - before))" ] || { echo "multihost-sim: counts differ" >&2; exit 1; }
