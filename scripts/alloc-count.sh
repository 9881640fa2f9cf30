#!/usr/bin/env bash
# Benchmark, not a test: shows that neither side allocates per connection. Runs `connstorm server`
# and `connstorm load` under valgrind for two run lengths (1,000 and 3,000 connections at 500/s) in
# a private network namespace and prints each side's total heap allocations: equal totals (up to a
# few allocations per second of run time, for the per-second report) mean no allocation per
# connection. Needs root and valgrind. Usage: scripts/alloc-count.sh [path/to/connstorm]
set -euo pipefail
B=${1:-target/release/connstorm}
B=$(realpath "$B")
exec unshare -n bash -c '
set -euo pipefail
ip link set lo up
B='"$B"'
tmp=$(mktemp -d)
for secs in 2 6; do
  port=$((19700 + secs))
  valgrind --tool=memcheck --leak-check=no "$B" server --listen 127.0.0.1:$port --cpus 0 --engine epoll --duration $((secs + 8))s >/dev/null 2>"$tmp/server-$secs.log" &
  sp=$!
  sleep 5
  timeout 120 valgrind --tool=memcheck --leak-check=no "$B" load --target 127.0.0.1:$port --rate 500/s --duration ${secs}s --warmup 0s --cpus 1 >/dev/null 2>"$tmp/load-$secs.log"
  wait $sp
  echo "$((secs * 500)) connections: server $(grep -o "total heap usage: [0-9,]* allocs" "$tmp/server-$secs.log"), load $(grep -o "total heap usage: [0-9,]* allocs" "$tmp/load-$secs.log")"
done
rm -rf "$tmp"
'
