#!/usr/bin/env bash
# README's test command: `scripts/test.sh [CARGO TEST ARGS…]` as root (`sudo scripts/test.sh` as
# another user; a root shell on a fresh machine may have no sudo).
#
# 1. Installs, with apt-get, the Debian packages whose tools the tests run when a tool is missing
#    (the table below is the whole list; testkit's `require_tool` calls must name a tool that is
#    in it: `tools_table_lists_every_required_tool` in testkit checks that).
# 2. Runs every test binary of the workspace: `cargo test --workspace --locked --release
#    --no-fail-fast`, so one failing test never hides the others; cargo lists the failed
#    binaries at the end.
#
# Runs as root: the tests make private network namespaces (and change sysctls only inside them).
# Exit status: cargo's (0 when every test passed); 2 when it cannot start (not root, no cargo,
# apt-get failed).
set -euo pipefail
cd "$(dirname "$0")/.."

# tool:package — every system tool a test runs.
tools=(
  ip:iproute2 ss:iproute2 tc:iproute2
  nft:nftables
  unshare:util-linux prlimit:util-linux setpriv:util-linux taskset:util-linux script:util-linux
  man:man-db
  git:git
  sh:dash
  systemd-sysctl:systemd
)
# Where packages install tools that are not on PATH (testkit's TOOL_DIRS_OUTSIDE_PATH).
tool_dirs=(/usr/lib/systemd /lib/systemd)

if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/test.sh: the tests make network namespaces and need root: run sudo scripts/test.sh" >&2
  exit 2
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo is not on PATH: install Rust (https://rustup.rs), then run this again" >&2
  exit 2
fi

missing=()
for entry in "${tools[@]}"; do
  tool=${entry%%:*} package=${entry#*:}
  found=
  if command -v "$tool" >/dev/null 2>&1; then found=1; fi
  for d in "${tool_dirs[@]}"; do if [ -x "$d/$tool" ]; then found=1; fi; done
  if [ -z "$found" ]; then
    case " ${missing[*]-} " in *" $package "*) ;; *) missing+=("$package") ;; esac
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "scripts/test.sh: installing ${missing[*]} (apt-get): tools the tests run"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: no apt-get here: install the packages ${missing[*]} (or their tools) by hand" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null; then
    echo "scripts/test.sh: apt-get could not install ${missing[*]}: install them by hand and run this again" >&2
    exit 2
  fi
fi

# A failing test prints its one-line message; a backtrace only when asked for.
export RUST_BACKTRACE="${RUST_BACKTRACE:-0}"
exec cargo test --workspace --locked --release --no-fail-fast "$@"
