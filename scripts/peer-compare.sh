#!/usr/bin/env bash
# Benchmark, not a test: new HTTP connections per second, connstorm against a peer tool on the same
# nginx and the same CPUs (issue 14, "Peers like for like").
#
#   wrk -c C -H 'Connection: close'   vs   connstorm load --http --concurrency C
#
# both closed loop with C connections in flight, one request per connection, against nginx pinned
# to one CPU (1 worker, keepalive_timeout 0, `return 204`, access log off); the clients are
# pinned to another CPU. ROUNDS interleaved rounds, counterbalanced (odd rounds wrk then connstorm,
# even rounds connstorm then wrk: wrk leaves ~one TIME_WAIT socket per connection on nginx's side,
# which slowed the run right after it in 3 of 4 paired checks), then the median of each and the
# paired ratios connstorm/wrk per round. Then connstorm open loop at 80% of
# its median closed-loop rate, with its response-latency p99 (scheduled start -> response
# complete). The nginx worker's CPU use during each run says whether nginx was the limit (~100% of
# its CPU: both tools measure nginx, and the ratio says little about the tools).
#
# Then TLS (HTTPS, one request per new connection; TLS 1.3 with the X25519 key exchange, which
# both clients offer first, and a self-signed ECDSA P-256 certificate made here with openssl):
#
#   h2load --h1 -c C (TLS, no resumption)   vs   connstorm load --tls --http --concurrency C
#                                                 (--tls-resume off, then --tls-resume tickets)
#
# on the same nginx (a second server block, `ssl_session_tickets on`), same CPUs, ROUNDS
# interleaved rounds, medians, paired ratios connstorm/h2load per round (the resumed figure is
# shown beside the full one: h2load does not resume sessions). connstorm runs with --insecure, as
# h2load does not verify the certificate either (both still verify the handshake signature),
# and with --close server, as h2load waits for the server's close: connstorm's default RST
# after the response made nginx's close_notify write fail (strace of the nginx worker: 0.77
# failed write(2) per connection, against none under h2load), costing nginx CPU per handshake.
# When nginx is the TLS limit, the same two clients then run against connstorm's own
# `server --tls --mode http` on the server CPU (h2load vs connstorm full handshakes, paired).
#
# Everything runs in a private network namespace (unshare -n; loopback only). Installs
# nginx-light, wrk and nghttp2-client (h2load) with apt-get when missing (needs root and the
# Debian archive). The figures are only as quiet as the machine: on a shared host, say so.
#
# Usage: scripts/peer-compare.sh [path/to/connstorm]
# Environment: SERVER_CPU (default 0), CLIENT_CPU (default 1), CONNS (64), DURATION (5, seconds),
# ROUNDS (3), H2_REQUESTS (h2load -n, default CONNS x 60).
set -euo pipefail
B=$(realpath "${1:-target/release/connstorm}")
[ -x "$B" ] || { echo "peer-compare: no connstorm binary at $B: build it (cargo build --release)" >&2; exit 2; }
need=()
command -v nginx >/dev/null || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v openssl >/dev/null || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
  echo "peer-compare: installing ${need[*]} (apt-get)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
export B SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1} CONNS=${CONNS:-64} \
  DURATION=${DURATION:-5} ROUNDS=${ROUNDS:-3} H2_REQUESTS=${H2_REQUESTS:-}
exec unshare -n bash -c '
set -euo pipefail
ip link set lo up
tmp=$(mktemp -d)
port=18080
tport=18443
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
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
  server {
    listen 127.0.0.1:$tport ssl backlog=4096 reuseport;
    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key $tmp/key.pem;
    ssl_protocols TLSv1.3;
    ssl_ecdh_curve X25519:prime256v1;
    ssl_session_tickets on;
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
  printf "%s\n" "$out" >"$tmp/last.out"
  echo "$(echo "$out" | $parse) $(echo "($w1 - $w0) / $ticks / ($t1 - $t0) * 100" | bc -l)"
}
# After a connstorm run: its failure classes and any WARNING lines, when it had some (a rate
# with failures in it is not the rate of the same work).
cs_failures() {
  awk "/^  failures/ {f = 1; print; next} f && /^    / {print; next} {f = 0} /WARNING/" "$tmp/last.out" |
    grep -v "failures: *none" | sed "s/^ */       /" || true
}
wrk_rate() { awk "/Requests\/sec:/ {print \$2}"; }
# connstorm: complete responses per second over the measured window.
cs_rate() { sed -n "s/.*responses (\([0-9,.]*\) responses\/s).*/\1/p" | tr -d ,; }
url=http://127.0.0.1:$port/
# Sockets in TIME_WAIT in the namespace now (left by the run before: wrk closes after nginx, so
# nginx keeps ~one per connection; connstorm resets, leaving none).
tw() { ss -Htan state time-wait | wc -l; }
wr=(); cr=()
printf "%-6s %-10s %14s %12s %16s\n" round tool "requests/s" "nginx CPU %" "TIME_WAIT after"
# abba R A B [ARGS...]: round R runs A then B when odd, B then A when even (counterbalanced).
abba() {
  local r=$1 a=$2 b=$3; shift 3
  if [ $((r % 2)) -eq 1 ]; then "$a" "$@"; "$b" "$@"; else "$b" "$@"; "$a" "$@"; fi
}
wrk_run() {
  parse=wrk_rate
  read -r w wc < <(measure taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" -H "Connection: close" "$url")
  printf "%-6s %-10s %14.1f %12.1f %16s\n" "$r" wrk "$w" "$wc" "$(tw)"
}
cs_run() {
  parse=cs_rate
  read -r c cc < <(measure "$B" load --target 127.0.0.1:$port --http --concurrency "$CONNS" \
      --duration "${DURATION}s" --warmup 1s --cpus "$CLIENT_CPU")
  printf "%-6s %-10s %14.1f %12.1f %16s\n" "$r" connstorm "$c" "$cc" "$(tw)"
  cs_failures
}
# Counterbalanced (ABBA): odd rounds run the peer first, even rounds connstorm first, so neither
# tool always inherits the other'"'"'s TIME_WAIT sockets and warm caches.
for r in $(seq "$ROUNDS"); do
  abba "$r" wrk_run cs_run
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
echo "connstorm open loop at 80% of its median closed-loop rate: ${rate}/s ($(tw) sockets in TIME_WAIT at its start, left by the runs before)"
parse=cat
out=$("$B" load --target 127.0.0.1:$port --http --rate "${rate}/s" --duration "${DURATION}s" --warmup 1s \
  --cpus "$CLIENT_CPU" 2>/dev/null || true)
echo "$out" | grep -E "rate:|attempts:|http:|status:|response \(|WARNING" | sed "s/^/  /"

echo
echo "TLS: new HTTPS connections/s (TLS 1.3, X25519, ECDSA P-256 certificate, one request per connection)"
h2_rate() { sed -n "s/^finished in .*, \([0-9.]*\) req\/s.*/\1/p"; }
hr=(); fr=(); rr=()
# h2load -D does not reconnect after the server closes (keepalive_timeout 0): a request count it is.
H2N=${H2_REQUESTS:-$((CONNS * 60))}

printf "%-6s %-22s %14s %12s\n" round tool "connections/s" "nginx CPU %"
# One TLS round r against port $2: h2load --h1, then connstorm full handshakes; sets h, f.
# Odd rounds run h2load first, even rounds connstorm first (counterbalanced, as above).
h2_vs_full() {
  local hc fc
  h2_run() {
    parse=h2_rate
    read -r h hc < <(measure taskset -c "$CLIENT_CPU" h2load --h1 -t1 -c"$CONNS" -n"$H2N" "https://127.0.0.1:$2/")
    printf "%-6s %-22s %14.1f %12.1f\n" "$1" "h2load --h1" "$h" "$hc"
  }
  full_run() {
    parse=cs_rate
    read -r f fc < <(measure "$B" load --target 127.0.0.1:$2 --tls --insecure --close server \
        --http --concurrency "$CONNS" --duration "${DURATION}s" --warmup 1s --cpus "$CLIENT_CPU" --tls-resume off)
    printf "%-6s %-22s %14.1f %12.1f\n" "$1" "connstorm (full)" "$f" "$fc"
    cs_failures
  }
  abba "$1" h2_run full_run "$@"
}
for r in $(seq "$ROUNDS"); do
  h2_vs_full "$r" "$tport"
  parse=cs_rate
  read -r e ec < <(measure "$B" load --target 127.0.0.1:$tport --tls --insecure --close server \
      --http --concurrency "$CONNS" --duration "${DURATION}s" --warmup 1s --cpus "$CLIENT_CPU" --tls-resume tickets)
  printf "%-6s %-22s %14.1f %12.1f\n" "$r" "connstorm (resumed)" "$e" "$ec"
  cs_failures
  hr+=("$h"); fr+=("$f"); rr+=("$e")
done
tratios=()
for i in "${!hr[@]}"; do tratios+=("$(echo "${fr[$i]} / ${hr[$i]}" | bc -l)"); done
echo
printf "median h2load --h1           %12.1f req/s (each a new TLS connection: nginx closes, keepalive_timeout 0)\n" "$(median "${hr[@]}")"
printf "median connstorm (full)      %12.1f responses/s (new TLS connection each, full handshakes)\n" "$(median "${fr[@]}")"
printf "median connstorm (resumed)   %12.1f responses/s (--tls-resume tickets)\n" "$(median "${rr[@]}")"
printf "paired ratios connstorm full/h2load: %s (median %.2f)\n" "$(printf "%.2f " "${tratios[@]}")" "$(median "${tratios[@]}")"

# When nginx is the limit (its CPU near 100% above), the clients are compared against a server
# that is not: connstorm'"'"'s own (server --tls --mode http, a self-signed P-256 certificate, TLS 1.3,
# tickets on), same CPUs. The CPU column is then that server'"'"'s.
sport=18444
"$B" server --listen 127.0.0.1:$sport --cpus "$SERVER_CPU" --tls --mode http --duration 900s >/dev/null 2>&1 &
own=$!
cleanup() { kill "$master" 2>/dev/null || true; kill -INT "$own" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
for _ in $(seq 100); do grep -q ":$(printf %04X $sport) 00000000:0000 0A" /proc/net/tcp && break; sleep 0.05; done
worker=$own
echo
echo "TLS against connstorm server --tls --mode http on CPU $SERVER_CPU (not nginx)"
printf "%-6s %-22s %14s %12s\n" round tool "connections/s" "server CPU %"
sh=(); sf=(); sratios=()
for r in $(seq "$ROUNDS"); do
  h2_vs_full "$r" "$sport"
  sh+=("$h"); sf+=("$f"); sratios+=("$(echo "$f / $h" | bc -l)")
done
echo
printf "median h2load --h1           %12.1f req/s\n" "$(median "${sh[@]}")"
printf "median connstorm (full)      %12.1f responses/s\n" "$(median "${sf[@]}")"
printf "paired ratios connstorm full/h2load (own server): %s (median %.2f)\n" "$(printf "%.2f " "${sratios[@]}")" "$(median "${sratios[@]}")"
kill -INT "$own"; wait "$own" 2>/dev/null || true
'
