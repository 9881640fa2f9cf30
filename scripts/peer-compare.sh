#!/usr/bin/env bash
# Benchmark, not a test: new HTTP connections per second, connstorm against a peer tool on the same
# nginx and the same CPUs (issue 14, "Peers like for like").
#
#   wrk -c C -H 'Connection: close'   vs   connstorm load --http --concurrency C
#
# both closed loop with C connections in flight, one request per connection, against nginx pinned
# to one CPU (1 worker, keepalive_timeout 0, `return 204`, access log off); the clients are
# pinned to another CPU. ROUNDS interleaved rounds (wrk, connstorm, wrk, connstorm, ...), then the
# median of each and the paired ratios connstorm/wrk per round. Then connstorm open loop at 80% of
# its median closed-loop rate, with its response-latency p99 (scheduled start -> response
# complete). The nginx worker's CPU use during each run says whether nginx was the limit (~100% of
# its CPU: both tools measure nginx, and the ratio says little about the tools).
#
# Everything runs in a private network namespace (unshare -n; loopback only). Installs
# nginx-light and wrk with apt-get when missing (needs root and the Debian archive).
#
# Usage: scripts/peer-compare.sh [path/to/connstorm]
# Environment: SERVER_CPU (default 0), CLIENT_CPU (default 1), CONNS (64), DURATION (5, seconds),
# ROUNDS (3).
set -euo pipefail
B=$(realpath "${1:-target/release/connstorm}")
[ -x "$B" ] || { echo "peer-compare: no connstorm binary at $B: build it (cargo build --release)" >&2; exit 2; }
need=()
command -v nginx >/dev/null || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
if [ ${#need[@]} -gt 0 ]; then
  echo "peer-compare: installing ${need[*]} (apt-get)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
export B SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1} CONNS=${CONNS:-64} \
  DURATION=${DURATION:-5} ROUNDS=${ROUNDS:-3}
exec unshare -n bash -c '
set -euo pipefail
ip link set lo up
tmp=$(mktemp -d)
port=18080
cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
worker_cpu_affinity auto;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 8192; }
http {
  access_log off;
  keepalive_timeout 0;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  server {
    listen 127.0.0.1:$port backlog=4096 reuseport;
    location / { return 204; }
  }
}
EOF
taskset -c "$SERVER_CPU" nginx -p "$tmp" -c "$tmp/nginx.conf" &
master=$!
cleanup() { kill "$master" 2>/dev/null || true; wait "$master" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$tmp/nginx.pid" ] && break; sleep 0.05; done
sleep 0.3
worker=$(pgrep -P "$master" | head -1)
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk "{print \$14 + \$15}" "/proc/$worker/stat"; }
# Runs "$@", prints "<rate> <nginx worker CPU %>" (rate from the tool output, parsed by $parse).
measure() {
  local t0 t1 w0 w1 out
  w0=$(cpu_ticks); t0=$(date +%s.%N)
  out=$("$@" 2>/dev/null)
  t1=$(date +%s.%N); w1=$(cpu_ticks)
  echo "$(echo "$out" | $parse) $(echo "($w1 - $w0) / $ticks / ($t1 - $t0) * 100" | bc -l)"
}
wrk_rate() { awk "/Requests\/sec:/ {print \$2}"; }
# connstorm: complete responses per second over the measured window.
cs_rate() { sed -n "s/.*responses (\([0-9,.]*\) responses\/s).*/\1/p" | tr -d ,; }
url=http://127.0.0.1:$port/
wr=(); cr=()
printf "%-6s %-10s %14s %12s\n" round tool "requests/s" "nginx CPU %"
for r in $(seq "$ROUNDS"); do
  parse=wrk_rate
  read -r w wc < <(measure taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" -H "Connection: close" "$url")
  printf "%-6s %-10s %14.1f %12.1f\n" "$r" wrk "$w" "$wc"
  parse=cs_rate
  read -r c cc < <(measure "$B" load --target 127.0.0.1:$port --http --concurrency "$CONNS" \
      --duration "${DURATION}s" --warmup 1s --cpus "$CLIENT_CPU")
  printf "%-6s %-10s %14.1f %12.1f\n" "$r" connstorm "$c" "$cc"
  wr+=("$w"); cr+=("$c")
done
median() { printf "%s\n" "$@" | sort -g | awk "{a[NR]=\$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}"; }
ratios=()
for i in "${!wr[@]}"; do ratios+=("$(echo "${cr[$i]} / ${wr[$i]}" | bc -l)"); done
mw=$(median "${wr[@]}"); mc=$(median "${cr[@]}"); mr=$(median "${ratios[@]}")
echo
printf "median wrk        %12.1f requests/s (new connections/s, Connection: close)\n" "$mw"
printf "median connstorm  %12.1f responses/s (one request per connection)\n" "$mc"
printf "paired ratios connstorm/wrk: %s (median %.2f)\n" "$(printf "%.2f " "${ratios[@]}")" "$mr"
rate=$(printf "%.0f" "$(echo "$mc * 0.8" | bc -l)")
echo
echo "connstorm open loop at 80% of its median closed-loop rate: ${rate}/s"
parse=cat
out=$("$B" load --target 127.0.0.1:$port --http --rate "${rate}/s" --duration "${DURATION}s" --warmup 1s \
  --cpus "$CLIENT_CPU" 2>/dev/null || true)
echo "$out" | grep -E "rate:|attempts:|http:|status:|response \(|WARNING" | sed "s/^/  /"
'
