#!/usr/bin/env bash
# Benchmark, not a test: peak RSS of each side over a long run. Starts `connstorm server` (CPU 0)
# and `connstorm load` (CPU 1, open loop) in a private network namespace for DURATION (default
# 600s) at RATE (default 1M/min) and prints each process's VmHWM (peak resident set) from
# /proc/PID/status at the end. Needs root. Usage: scripts/rss-soak.sh [DURATION] [RATE] [connstorm]
set -euo pipefail
D=${1:-600s}
R=${2:-1M/min}
B=$(realpath "${3:-target/release/connstorm}")
exec unshare -n bash -c '
set -euo pipefail
ip link set lo up
B='"$B"'; D='"$D"'; R='"$R"'
secs=${D%s}
"$B" server --listen 127.0.0.1:19800 --cpus 0 --duration $((secs + 15))s >/dev/null 2>&1 &
sp=$!
sleep 1
"$B" load --target 127.0.0.1:19800 --rate "$R" --duration "$D" --warmup 2s --cpus 1 --format json >/tmp/rss-soak-load.json 2>/dev/null &
lp=$!
peak_load=0; peak_srv=0
while kill -0 $lp 2>/dev/null; do
  v=$(awk "/VmHWM/ {print \$2}" /proc/$lp/status 2>/dev/null || echo 0)
  [ "${v:-0}" -gt "$peak_load" ] && peak_load=$v
  v=$(awk "/VmHWM/ {print \$2}" /proc/$sp/status 2>/dev/null || echo 0)
  [ "${v:-0}" -gt "$peak_srv" ] && peak_srv=$v
  sleep 1
done
wait $lp || true
kill -TERM $sp 2>/dev/null || true; wait $sp || true
echo "peak RSS (VmHWM): server ${peak_srv} KiB, load ${peak_load} KiB over $D at $R"
python3 -c "import json; r=json.load(open(\"/tmp/rss-soak-load.json\")); print(\"load: achieved\", round(r[\"achieved_per_sec\"],1), \"/s of\", r[\"offered_per_sec\"], \"offered; failures\", r[\"failures\"])" || true
'
