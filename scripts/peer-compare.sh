#!/usr/bin/env bash
# Benchmark, not a test: new HTTP connections per second, connstorm against a peer tool on the same
# nginx and the same CPUs (issue 14, "Peers like for like").
#
#   wrk -c C -H 'Connection: close'   vs   connstorm load --http --close server --concurrency C
#
# on the same wire (issue 36): the server closes after the response, and each client closes after
# the server's FIN — what wrk does with `Connection: close`, and `load --http`'s default. Beside
# it, labelled as a different wire, connstorm with --close rst (RST after the response: no
# TIME_WAIT on nginx, less work on both sides, not what HTTP clients do); the headline ratio is
# the same-wire one. All closed loop with C connections in flight, one request per connection, against nginx pinned
# to one CPU (1 worker, keepalive_timeout 0, `return 204`, access log off); the clients are
# pinned to another CPU. ROUNDS interleaved rounds, counterbalanced (odd rounds wrk, connstorm,
# connstorm RST; even rounds the reverse), then the median of each and the paired ratios
# connstorm/wrk per round. Each HTTP run gets a network namespace and an nginx of its own: wrk closes after nginx,
# so nginx keeps ~one TIME_WAIT socket per connection (~14,000 after 5 s), and in a shared
# namespace their timers expire on the client CPU during the next run (connstorm right after wrk:
# 31.0k responses/s, right after itself: 41.9k, 2026-12-05); connstorm's RST leaves none, so a
# shared namespace penalised only the tool after wrk. Then connstorm open loop at 80% of its median
# closed-loop rate, with its response-latency p99 (scheduled start -> response complete). The
# nginx worker's CPU use during each run says whether nginx was the limit (~100% of its CPU: both
# tools measure nginx, and the ratio says little about the tools); the client CPU's use (all of
# it: on loopback the softirq work of both ends of a packet runs on the sending CPU) per response
# says what each client costs.
#
# Then TLS (HTTPS, one request per new connection; TLS 1.3 with the X25519 key exchange, which
# both clients offer first, and a self-signed ECDSA P-256 certificate made here with openssl),
# full handshakes and resumed ones apart, because h2load resumes whenever the server lets it: it
# keeps each client's TLS session and offers it on the next connection (strace of nginx under
# `h2load --h1 -c64 -n3000`: 2,936 of 3,000 server flights had no certificate). So:
#
#   full:    h2load --h1 -c C   vs   connstorm load --tls --http --tls-resume off --concurrency C
#            against an nginx server block that refuses resumption (ssl_session_tickets off,
#            ssl_session_cache off): every handshake full for both;
#   resumed: h2load --h1 -c C   vs   connstorm load --tls --http --tls-resume tickets
#            against a block that offers tickets;
#
# on the same nginx and CPUs, ROUNDS interleaved rounds, medians and paired ratios per round.
# nginx logs $ssl_session_reused for every request on both blocks, and each row shows how many
# of that run's handshakes nginx itself saw resumed (0 on the full block, or the comparison is
# void). connstorm runs with --insecure, as h2load does not verify the certificate either (both
# still verify the handshake signature), and with --close server, as h2load waits for the
# server's close: connstorm's RST after the response (its default before issue 36) made nginx's close_notify write
# fail (strace of the nginx worker: 0.77 failed write(2) per connection, against none under
# h2load), costing nginx CPU per handshake. Then the same two full-handshake clients against
# connstorm's own `server --tls --tls-resume off --mode http` on the server CPU, for when nginx
# is the limit (its CPU near 100%: then both clients measure nginx, not themselves).
#
# Everything runs in private network namespaces (unshare -n; loopback only). Installs
# nginx-light, wrk and nghttp2-client (h2load) with apt-get when missing (needs root and the
# Debian archive). The figures are only as quiet as the machine: on a shared host, say so.
#
# Usage: scripts/peer-compare.sh [path/to/connstorm]
# Environment: SERVER_CPU (default 0), CLIENT_CPU (default 1), CONNS (64), DURATION (5, seconds),
# ROUNDS (3), H2_REQUESTS (h2load -n, default CONNS x 60, at least CONNS), PARTS (`all`, the
# default, or `http`: the HTTP rounds only, no TLS and no h2load); whole numbers, two
# different CPUs this process may use, DURATION at most 30 days (connstorm's limit), CONNS within
# the open-file limit (RLIMIT_NOFILE, raised to its hard limit here); checked before anything runs.
# Exit status: 0; 1 a tool gave no rate (its output's tail is shown); 2 bad input; 130 Ctrl-C
# (143 SIGTERM): nginx and the tools stopped, namespaces and files removed, no figures from the
# run it cut.
set -euo pipefail
self=$(realpath "$0")
# A shell without job control starts a background command (`peer-compare.sh &`, setsid from a
# script) with SIGINT ignored, and bash can neither trap nor reset a signal ignored at entry:
# Ctrl-C then reached only the tools (wrk catches it and exits 0 with partial figures) and the
# script went on with a row for the cut run. Start again with SIGINT and SIGTERM at their
# defaults (coreutils env), which the levels below inherit.
if [[ $(trap -p INT TERM) == *"''"* ]] && env --default-signal=INT true 2>/dev/null; then
  exec env --default-signal=INT,TERM "$BASH" "$self" "$@"
fi
ticks=$(getconf CLK_TCK)
port=18080
tport=18443
fport=18445
# Busy ticks of CPU $1 (user, nice, system, irq, softirq) from /proc/stat (proc(5)).
cpu_busy() { awk -v c="cpu$1" '$1 == c {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
# User + system ticks of process $1 (proc_pid_stat(5) fields 14 and 15).
proc_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
wrk_rate() { awk '/Requests\/sec:/ {print $2}'; }
# connstorm: complete responses per second over the measured window.
cs_rate() { sed -n 's/.*responses (\([0-9,.]*\) responses\/s).*/\1/p' | tr -d ,; }
h2_rate() { sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p'; }
# Sockets in TIME_WAIT in this network namespace now.
tw() { ss -Htan state time-wait | wc -l; }
# tls_server DIR PORT RESUMPTION-LINES: an nginx TLS server block on PORT (TLS 1.3, X25519 first,
# DIR's certificate, `return 204`) with the given resumption directives, logging
# \$ssl_session_reused per request (r or .), unbuffered, to DIR/tls-PORT.log: nginx's own count
# of resumed handshakes.
tls_server() {
  echo "server {
    listen 127.0.0.1:$2 ssl backlog=4096 reuseport;
    ssl_certificate $1/cert.pem;
    ssl_certificate_key $1/key.pem;
    ssl_protocols TLSv1.3;
    ssl_ecdh_curve X25519:prime256v1;
    $3
    access_log $1/tls-$2.log reuse;
    location / { return 204; }
  }"
}
# nginx_conf DIR: DIR/nginx.conf, 1 worker, HTTP on $port; TLS on $tport and $fport when
# DIR/cert.pem exists.
nginx_conf() {
  local tls=""
  # Two TLS blocks: $tport offers resumption (tickets), $fport refuses it (no tickets, no
  # session cache: full handshakes only).
  [ -e "$1/cert.pem" ] && tls="log_format reuse '\$ssl_session_reused';
  $(tls_server "$1" "$tport" "ssl_session_tickets on;")
  $(tls_server "$1" "$fport" "ssl_session_tickets off; ssl_session_cache off;")"
  cat >"$1/nginx.conf" <<EOC
worker_processes 1;
worker_cpu_affinity auto;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections $((CONNS + 256 > 8192 ? CONNS + 256 : 8192)); }
http {
  access_log off;
  keepalive_timeout 0;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi;
  scgi_temp_path $1/scgi;
  server {
    listen 127.0.0.1:$port backlog=4096 reuseport;
    location / { return 204; }
  }
  $tls
}
EOC
}
# start_nginx DIR: nginx on $SERVER_CPU in this network namespace; sets master and worker.
start_nginx() {
  taskset -c "$SERVER_CPU" nginx -p "$1" -c "$1/nginx.conf" &
  master=$!
  for _ in $(seq 100); do [ -s "$1/nginx.pid" ] && break; sleep 0.05; done
  sleep 0.3
  worker=$(pgrep -P "$master" | head -1 || true)
  [ -n "$worker" ] || { echo "peer-compare: nginx did not start: $(cat "$1/error.log" 2>/dev/null)" >&2; exit 1; }
}
# measure PARSER OUT CMD...: runs CMD (its output to OUT) and sets mrate, mscpu and mccpu: the
# rate parsed from OUT by PARSER, the server's CPU % (that of process $worker), the client's (all
# of CPU $CLIENT_CPU). A run without a rate (none, or 0: wrk with no connection says "Requests/sec:
# 0.00") ends the script with its output's tail. Not in a command substitution: a subshell has
# none of this level's traps, so after a tool that exits 0 on SIGINT (wrk) it measured on and
# printed the cut run; here the trap ends this level as soon as the tool returns.
measure() {
  local parse=$1 out=$2 w0 w1 c0 c1 t0 t1 rate
  shift 2
  local rc=0
  w0=$(proc_ticks "$worker"); c0=$(cpu_busy "$CLIENT_CPU"); t0=$(date +%s.%N)
  "$@" >"$out" 2>&1 || rc=$?
  # A tool ended by SIGINT/SIGTERM (connstorm exits 130/143 with its report): a partial run
  # is no round.
  if [ "$rc" -eq 130 ] || [ "$rc" -eq 143 ]; then
    exit "$rc"
  fi
  t1=$(date +%s.%N); w1=$(proc_ticks "$worker"); c1=$(cpu_busy "$CLIENT_CPU")
  rate=$($parse <"$out")
  # One number with a nonzero digit: the ratios and µs per response divide by it (bc).
  if ! [[ $rate =~ ^[0-9]*\.?[0-9]+$ && $rate =~ [1-9] ]]; then
    { echo "peer-compare: no rate in the output of: $*"; tail -5 "$out"; } >&2
    exit 1
  fi
  mrate=$rate
  mscpu=$(echo "($w1 - $w0) / $ticks / ($t1 - $t0) * 100" | bc -l)
  mccpu=$(echo "($c1 - $c0) / $ticks / ($t1 - $t0) * 100" | bc -l)
}

# Ctrl-C sends SIGINT to the whole process group (nginx and the tools too): every level stops
# there, through its EXIT trap (nginx stopped, files removed), with 130 (SIGTERM: 143). Bash runs
# a trap once the foreground command it waits for has returned, so a level stops right after the
# tool (or the level below) it ran, before it measures or prints anything; no long command runs
# in a subshell (command substitution), where these traps would be reset.
interrupted() { echo "peer-compare: interrupted: no figures from the run it cut" >&2; exit "$1"; }
trap 'interrupted 130' INT
trap 'interrupted 143' TERM

# Internal: one HTTP run in the fresh network namespace this process was started in (by http_run
# below): its own nginx, the run, then "<rate> <nginx CPU %> <client CPU %> <TIME_WAIT after>".
if [ "${1:-}" = --http-run ]; then
  # Quietly: the level that started this one says it was interrupted.
  trap 'exit 130' INT
  trap 'exit 143' TERM
  parse=$2 out=$3 master="" d=""
  shift 3
  # Set before nginx starts, so a signal while it starts stops it too; a second Ctrl-C does not
  # cut the cleanup short.
  trap 'trap "" INT TERM; [ -z "$master" ] || { kill "$master" 2>/dev/null; wait "$master" 2>/dev/null; }
    rm -rf "$d"' EXIT
  ip link set lo up
  d=$(mktemp -d -p "$TMPD")
  nginx_conf "$d"
  start_nginx "$d"
  measure "$parse" "$out" "$@"
  echo "$mrate $mscpu $mccpu $(tw)"
  exit 0
fi

if [ "${1:-}" != --in-namespace ]; then
  bad() { echo "peer-compare: $*" >&2; exit 2; }
  bin=${1:-target/release/connstorm}
  [ -f "$bin" ] && [ -x "$bin" ] ||
    bad "no connstorm binary at $bin: build it (cargo build --release) or give its path"
  B=$(realpath "$bin")
  ROUNDS=${ROUNDS:-3} DURATION=${DURATION:-5} CONNS=${CONNS:-64}
  SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1} H2_REQUESTS=${H2_REQUESTS:-}
  PARTS=${PARTS:-all}
  [ "$PARTS" = all ] || [ "$PARTS" = http ] ||
    bad "PARTS=$PARTS: give all (HTTP and TLS) or http (the HTTP rounds only)"
  for v in ROUNDS DURATION CONNS ${H2_REQUESTS:+H2_REQUESTS}; do
    [[ ${!v} =~ ^[1-9][0-9]{0,8}$ ]] || bad "$v=${!v}: give a whole number from 1 to 999999999"
  done
  # connstorm refuses a --duration above 30 days, after the HTTP rounds would have run.
  [ "$DURATION" -le 2592000 ] ||
    bad "DURATION=$DURATION: at most 2592000 seconds (30 days, connstorm's limit); give a smaller DURATION"
  # h2load refuses fewer requests (-n) than clients (-c), after the HTTP part would have run.
  [ -z "$H2_REQUESTS" ] || [ "$H2_REQUESTS" -ge "$CONNS" ] ||
    bad "H2_REQUESTS=$H2_REQUESTS is below CONNS=$CONNS: h2load needs at least one request per connection; give H2_REQUESTS of at least $CONNS (or leave it unset: CONNS x 60)"
  # One descriptor per connection, in each client and in the server (nginx, connstorm server),
  # plus connstorm's slack of 256 (it refuses --concurrency above RLIMIT_NOFILE - 256; wrk out
  # of descriptors said "Divide by zero" and gave a 0.0 row). Raised to the hard limit, as
  # connstorm does; the tools and nginx inherit it.
  ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || true
  nofile=$(ulimit -Sn)
  [ "$nofile" = unlimited ] || [ "$CONNS" -le $((nofile - 256)) ] ||
    bad "CONNS=$CONNS: needs more file descriptors than RLIMIT_NOFILE ($nofile, hard $(ulimit -Hn)) allows: give CONNS of at most $((nofile > 256 ? nofile - 256 : 0)) or raise the hard limit (ulimit -Hn, as root)"
  allowed=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
  for v in SERVER_CPU CLIENT_CPU; do
    [[ ${!v} =~ ^[0-9]{1,6}$ ]] && taskset -c "${!v}" true 2>/dev/null ||
      bad "$v=${!v}: not a CPU this process may run on (allowed: $allowed)"
    # One spelling per CPU (00 and 0 are CPU 0), so the check below sees equal CPUs.
    printf -v "$v" '%d' "$((10#${!v}))"
  done
  [ "$SERVER_CPU" != "$CLIENT_CPU" ] ||
    bad "SERVER_CPU and CLIENT_CPU are both $SERVER_CPU: give two CPUs (on one, the client CPU figures would include nginx's work)"
  need=()
  command -v nginx >/dev/null || need+=(nginx-light)
  command -v wrk >/dev/null || need+=(wrk)
  if [ "$PARTS" = all ]; then
    command -v h2load >/dev/null || need+=(nghttp2-client)
    command -v openssl >/dev/null || need+=(openssl)
  fi
  if [ ${#need[@]} -gt 0 ]; then
    echo "peer-compare: installing ${need[*]} (apt-get)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  export B SERVER_CPU CLIENT_CPU CONNS DURATION ROUNDS H2_REQUESTS PARTS
  exec unshare -n "$BASH" "$self" --in-namespace
fi

master=""
own=""
TMPD=""
# A second Ctrl-C does not cut the cleanup short.
cleanup() {
  trap "" INT TERM
  [ -n "$master" ] && { kill "$master" 2>/dev/null || true; }
  [ -n "$own" ] && { kill -INT "$own" 2>/dev/null || true; }
  wait 2>/dev/null || true
  [ -z "$TMPD" ] || rm -rf "$TMPD"
}
trap cleanup EXIT
ip link set lo up
TMPD=$(mktemp -d)
export TMPD
url=http://127.0.0.1:$port/
# After a connstorm run: its failure classes and any WARNING lines, when it had some (a rate
# with failures in it is not the rate of the same work).
cs_failures() {
  awk '/^  failures/ {f = 1; print; next} f && /^    / {print; next} {f = 0} /WARNING/' "$TMPD/last.out" |
    grep -v "failures: *none" | sed "s/^ */       /" || true
}
# http_run PARSER CMD...: CMD against a fresh nginx in a fresh network namespace (see the top);
# sets rate, ncpu, ccpu (CPU %s), left (TIME_WAIT after). The second's pause lets the kernel
# tear the namespace down before the next run.
http_run() {
  local parse=$1
  shift
  local line
  line=$(unshare -n "$BASH" "$self" --http-run "$parse" "$TMPD/last.out" "$@") || {
    local rc=$?
    if [ "$rc" -eq 130 ] || [ "$rc" -eq 143 ]; then interrupted "$rc"; fi
    exit "$rc"
  }
  read -r rate ncpu ccpu left <<<"$line"
  sleep 1
}
# µs of client CPU per response at rate $1 and client CPU % $2.
per_resp() { echo "$2 / 100 * 1000000 / $1" | bc -l; }
row() { printf "%-6s %-10s %14.1f %12.1f %12.1f %11.1f %16s\n" "$@"; }
wr=(); cr=(); xr=()
printf "%-6s %-10s %14s %12s %12s %11s %16s\n" round tool "requests/s" "nginx CPU %" "client CPU %" "client µs/req" "TIME_WAIT after"
# abba R A B [ARGS...]: round R runs A then B when odd, B then A when even (counterbalanced).
abba() {
  local r=$1 a=$2 b=$3
  shift 3
  if [ $((r % 2)) -eq 1 ]; then "$a" "$@"; "$b" "$@"; else "$b" "$@"; "$a" "$@"; fi
}
# abc R A B C: round R runs A, B, C when odd, C, B, A when even (counterbalanced).
abc() {
  if [ $(($1 % 2)) -eq 1 ]; then "$2"; "$3"; "$4"; else "$4"; "$3"; "$2"; fi
}
wrk_run() {
  http_run wrk_rate taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" -H "Connection: close" "$url"
  w=$rate
  row "$r" wrk "$rate" "$ncpu" "$ccpu" "$(per_resp "$rate" "$ccpu")" "$left"
}
# connstorm on wrk's wire: the server closes after the response (--close server, the default of
# --http, given here so the wire is explicit).
cs_run() {
  http_run cs_rate "$B" load --target 127.0.0.1:$port --http --close server --concurrency "$CONNS" \
    --duration "${DURATION}s" --warmup 1s --cpus "$CLIENT_CPU"
  c=$rate
  row "$r" connstorm "$rate" "$ncpu" "$ccpu" "$(per_resp "$rate" "$ccpu")" "$left"
  cs_failures
}
# connstorm on another wire: RST after the response (--close rst), labelled as such.
cs_rst_run() {
  http_run cs_rate "$B" load --target 127.0.0.1:$port --http --close rst --concurrency "$CONNS" \
    --duration "${DURATION}s" --warmup 1s --cpus "$CLIENT_CPU"
  x=$rate
  row "$r" "cs RST" "$rate" "$ncpu" "$ccpu" "$(per_resp "$rate" "$ccpu")" "$left"
  cs_failures
}
echo "wrk and connstorm: the server closes after the response (same wire); cs RST: connstorm --close rst (another wire)"
for r in $(seq "$ROUNDS"); do
  abc "$r" wrk_run cs_run cs_rst_run
  wr+=("$w"); cr+=("$c"); xr+=("$x")
done
median() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratios=(); xratios=()
for i in "${!wr[@]}"; do
  ratios+=("$(echo "${cr[$i]} / ${wr[$i]}" | bc -l)")
  xratios+=("$(echo "${xr[$i]} / ${wr[$i]}" | bc -l)")
done
mw=$(median "${wr[@]}"); mc=$(median "${cr[@]}"); mr=$(median "${ratios[@]}")
echo
printf "median wrk        %12.1f requests/s (new connections/s, Connection: close: the server closes)\n" "$mw"
printf "median connstorm  %12.1f responses/s (one request per connection, --close server: the same wire)\n" "$mc"
printf "paired ratios connstorm/wrk, same wire: %s (median %.2f)\n" "$(printf "%.2f " "${ratios[@]}")" "$mr"
printf "another wire, not what wrk does: connstorm --close rst (RST after the response) median %.1f responses/s; paired ratios to wrk %s (median %.2f)\n" \
  "$(median "${xr[@]}")" "$(printf "%.2f " "${xratios[@]}")" "$(median "${xratios[@]}")"
orate=$(printf "%.0f" "$(echo "$mc * 0.8" | bc -l)")
[ "$orate" -ge 1 ] || orate=1
echo
echo "connstorm open loop at 80% of its median closed-loop rate: ${orate}/s (fresh namespace and nginx)"
http_run cs_rate "$B" load --target 127.0.0.1:$port --http --close server --rate "${orate}/s" --duration "${DURATION}s" \
  --warmup 1s --cpus "$CLIENT_CPU"
grep -E "rate:|attempts:|http:|status:|response \(|WARNING" "$TMPD/last.out" | sed "s/^/  /" || true
printf "  nginx CPU %.1f%%, client CPU %.1f%% (%.1f µs per response)\n" "$ncpu" "$ccpu" "$(per_resp "$rate" "$ccpu")"
[ "$PARTS" = all ] || exit 0

echo
echo "TLS: new HTTPS connections/s (TLS 1.3, X25519, ECDSA P-256 certificate, one request per connection)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$TMPD/key.pem" -out "$TMPD/cert.pem" 2>/dev/null
nginx_conf "$TMPD"
start_nginx "$TMPD"
# h2load -D does not reconnect after the server closes (keepalive_timeout 0): a request count it
# is, so an h2load run lasts as long as H2N requests take (about 2-4 s at 1,000-2,000/s), not
# DURATION; the rates are per second of each tool's own run.
H2N=${H2_REQUESTS:-$((CONNS * 60))}
trow() { printf "%-6s %-22s %14.1f %12.1f %12.1f %20s\n" "$@"; }
thead() { printf "%-6s %-22s %14s %12s %12s %20s\n" round tool "connections/s" "server CPU %" "client CPU %" "$1"; }
# nginx's log of port $1: lines so far (before a run), then "resumed/requests" of the lines
# after (after it): nginx's own count of the run's resumed handshakes.
log_lines() { wc -l <"$TMPD/tls-$1.log"; }
log_resumed() {
  tail -n +"$(($2 + 1))" "$TMPD/tls-$1.log" |
    awk '{n++} $1 == "r" {r++} END {printf "%d/%d", r, n}'
}
# tls_pair R PORT TOOL-RESUME LOGGED: round R against PORT, h2load then connstorm with
# --tls-resume TOOL-RESUME (odd rounds; even rounds connstorm first); sets h, f (rates) and hs,
# fs (server CPU %). LOGGED: nginx logs PORT (prints its resumed counts), else "-" (connstorm's
# server with --tls-resume off: none offered).
tls_pair() {
  local r=$1 p=$2 resume=$3 logged=$4
  h2_run() {
    local n0=0 seen="none offered"
    [ "$logged" = - ] || n0=$(log_lines "$p")
    measure h2_rate "$TMPD/last.out" taskset -c "$CLIENT_CPU" h2load --h1 -t1 \
      -c"$CONNS" -n"$H2N" "https://127.0.0.1:$p/"
    [ "$logged" = - ] || seen=$(log_resumed "$p" "$n0")
    h=$mrate hs=$mscpu
    trow "$r" "h2load --h1" "$h" "$mscpu" "$mccpu" "$seen"
  }
  cs_run_tls() {
    local n0=0 seen="none offered"
    [ "$logged" = - ] || n0=$(log_lines "$p")
    measure cs_rate "$TMPD/last.out" "$B" load --target 127.0.0.1:"$p" --tls \
      --insecure --close server --http --concurrency "$CONNS" --duration "${DURATION}s" --warmup 1s \
      --cpus "$CLIENT_CPU" --tls-resume "$resume"
    [ "$logged" = - ] || seen=$(log_resumed "$p" "$n0")
    f=$mrate fs=$mscpu
    trow "$r" "connstorm ($([ "$resume" = off ] && echo full || echo "$resume"))" "$f" "$mscpu" "$mccpu" "$seen"
    cs_failures
  }
  abba "$r" h2_run cs_run_tls
}
# ratios A B: the paired ratios A[i]/B[i] of two arrays named A and B.
ratios_of() {
  local -n a=$1 b=$2
  local i
  for i in "${!a[@]}"; do echo "${a[$i]} / ${b[$i]}" | bc -l; done
}
# summary TITLE PEER-ARRAY CS-ARRAY: medians and paired ratios.
summary() {
  local t=$1 rs
  local -n pa=$2 ca=$3
  mapfile -t rs < <(ratios_of "$3" "$2")
  printf "%s: h2load median %.1f/s, connstorm median %.1f/s; paired connstorm/h2load: %s(median %.2f)\n" \
    "$t" "$(median "${pa[@]}")" "$(median "${ca[@]}")" "$(printf "%.2f " "${rs[@]}")" "$(median "${rs[@]}")"
}
fh=(); fc=(); rh=(); rc=(); fhs=(); fcs=(); rhs=(); rcs=()
echo
echo "Against nginx on CPU $SERVER_CPU: full handshakes on port $fport (resumption refused), resumed on port $tport"
thead "resumed (nginx log)"
echo "(nginx's log counts the whole run, connstorm's 1 s warm-up included; h2load runs -n $H2N requests, no warm-up)"
for r in $(seq "$ROUNDS"); do
  tls_pair "$r" "$fport" off log
  fh+=("$h"); fc+=("$f"); fhs+=("$hs"); fcs+=("$fs")
  tls_pair "$r" "$tport" tickets log
  rh+=("$h"); rc+=("$f"); rhs+=("$hs"); rcs+=("$fs")
done
echo
summary "full handshakes   " fh fc
summary "resumed handshakes" rh rc
printf "nginx CPU %%, medians: full h2load %.1f, connstorm %.1f; resumed h2load %.1f, connstorm %.1f\n" \
  "$(median "${fhs[@]}")" "$(median "${fcs[@]}")" "$(median "${rhs[@]}")" "$(median "${rcs[@]}")"
# Which runs had nginx at its limit (median >= 90% of its CPU): there the rate is nginx's, and a
# ratio against it says how close each client came to nginx's limit, not how fast it is.
limited=()
for x in "full h2load:fhs" "full connstorm:fcs" "resumed h2load:rhs" "resumed connstorm:rcs"; do
  n=${x%%:*}
  declare -n arr=${x#*:}
  [ "$(echo "$(median "${arr[@]}") >= 90" | bc -l)" = 1 ] && limited+=("$n")
  unset -n arr
done
if [ ${#limited[@]} -gt 0 ]; then
  echo "nginx at >= 90% of its CPU (its limit) under: $(IFS=,; echo "${limited[*]}" | sed 's/,/, /g'): those rates are nginx's"
else
  echo "nginx below 90% of its CPU in every TLS run: the clients were the limit"
fi

# Full handshakes against a server that is not the limit: connstorm's own (server --tls
# --tls-resume off --mode http, a self-signed P-256 certificate, TLS 1.3), same CPUs. The server
# CPU column is then that server's.
sport=18444
# No --duration: it runs until the EXIT trap's SIGINT (a fixed 900 s ended it in the middle of
# the rounds once ROUNDS x DURATION exceeded it).
"$B" server --listen 127.0.0.1:$sport --cpus "$SERVER_CPU" --tls --tls-resume off --mode http >/dev/null 2>&1 &
own=$!
for _ in $(seq 100); do grep -q ":$(printf %04X $sport) 00000000:0000 0A" /proc/net/tcp && break; sleep 0.05; done
worker=$own
echo
echo "Full handshakes against connstorm server --tls --tls-resume off --mode http on CPU $SERVER_CPU (not nginx; it offers no resumption)"
thead "resumed"
sh=(); sf=()
for r in $(seq "$ROUNDS"); do
  tls_pair "$r" "$sport" off -
  sh+=("$h"); sf+=("$f")
done
echo
summary "full handshakes, own server" sh sf
