#!/usr/bin/env bash
# Opens an HTML report in headless Chromium and fails on console messages, network fetches or
# an empty page; leaves a screenshot for a person to look at.
#
#   scripts/html-check.sh REPORT.html SHOT.png     check one page, screenshot into SHOT.png
#   scripts/html-check.sh --self-test              the check itself must fail on a page with a
#                                                  console error and on one that fetches a URL
#
# The report has no script, so any console message (an error, a blocked load) is a failure:
# Chromium logs console messages to stderr (--enable-logging=stderr) as `INFO:CONSOLE...` with
# no level. Fetches are read from Chromium's network log (--log-net-log): a request whose
# network isolation key is the file:// page is the page's own (Chromium's background requests
# have none); every host name resolves to nothing (--host-resolver-rules), so nothing leaves
# the machine. Needs `chromium` (Debian package chromium); exits 1 on a failed check, 2 on bad
# usage.
set -euo pipefail

chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium_bin" ]; then
  echo "html-check: chromium not found (install the Debian package chromium)" >&2
  exit 2
fi

# check PAGE SHOT: 0 when the page renders with no console error and is not empty.
check() {
  local page shot work log dom
  page=$(realpath "$1")
  shot=$2
  work=$(mktemp -d)
  log="$work/console.log"
  dom="$work/dom.html"
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions
    --disable-background-networking --disable-component-update --disable-sync
    --user-data-dir="$work/profile" --host-resolver-rules="MAP * ~NOTFOUND"
    --hide-scrollbars --virtual-time-budget=5000 --enable-logging=stderr --v=0)
  timeout 120 "$chromium_bin" "${flags[@]}" --window-size=1200,2400 --screenshot="$shot" \
    "file://$page" 2>"$log" >/dev/null || true
  timeout 120 "$chromium_bin" "${flags[@]}" --log-net-log="$work/net.json" --dump-dom \
    "file://$page" 2>>"$log" >"$dom" || true
  local bad=0
  if grep -q 'CONSOLE' "$log"; then
    echo "html-check: $1: console messages (the page has no script: there must be none):" >&2
    grep 'CONSOLE' "$log" >&2
    bad=1
  fi
  local fetched
  fetched=$(grep '"network_isolation_key":"file://' "$work/net.json" 2>/dev/null |
    grep -o '"url":"[a-z-]*:[^"]*"' | grep -v '"url":"file:' | sort -u || true)
  if [ ! -s "$work/net.json" ]; then
    echo "html-check: $1: chromium wrote no network log" >&2
    bad=1
  elif [ -n "$fetched" ]; then
    echo "html-check: $1: the page fetched: $fetched" >&2
    bad=1
  fi
  if [ ! -s "$shot" ]; then
    echo "html-check: $1: no screenshot written; chromium said:" >&2
    tail -20 "$log" >&2
    bad=1
  elif [ "$(stat -c %s "$shot")" -lt 20000 ]; then
    echo "html-check: $1: screenshot of $(stat -c %s "$shot") bytes: an empty page" >&2
    bad=1
  fi
  if ! grep -q '<svg' "$dom" || ! grep -q 'id="summary"' "$dom"; then
    echo "html-check: $1: the rendered DOM has no summary section or no SVG ($(wc -c <"$dom") bytes)" >&2
    bad=1
  fi
  rm -rf "$work"
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  filler=$(printf '<p>%0500d</p>' 0)
  printf '<!DOCTYPE html><html><body><section id="summary">%s</section><svg width="10" height="10"></svg><script>console.warn("planted")</script></body></html>' "$filler" >"$tmp/error.html"
  printf '<!DOCTYPE html><html><head><style>@import url("https://fonts.example.invalid/x.css");</style></head><body><section id="summary">%s</section><svg width="10" height="10"></svg></body></html>' "$filler" >"$tmp/fetch.html"
  for case in "error:console messages" "fetch:the page fetched"; do
    p=${case%%:*}
    why=${case#*:}
    if check "$tmp/$p.html" "$tmp/$p.png" 2>"$tmp/$p.err"; then
      echo "html-check self-test: the $p page passed; the check does not catch it" >&2
      exit 1
    fi
    if ! grep -q "$why" "$tmp/$p.err"; then
      echo "html-check self-test: the $p page was refused, but not for \"$why\":" >&2
      cat "$tmp/$p.err" >&2
      exit 1
    fi
    echo "html-check self-test: $p page refused: $(grep "$why" "$tmp/$p.err" | head -1)"
  done
  exit 0
fi

if [ $# -ne 2 ]; then
  echo "usage: $0 REPORT.html SHOT.png | $0 --self-test" >&2
  exit 2
fi
if check "$1" "$2"; then
  echo "html-check: $1 rendered in $("$chromium_bin" --version 2>/dev/null | head -1) without console errors; screenshot $2 ($(stat -c %s "$2") bytes)"
else
  exit 1
fi
