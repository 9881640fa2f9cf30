#!/usr/bin/env bash
# Opens an HTML report (or an SVG plot) in headless Chromium at 1400×900 and fails on console
# messages, network fetches, an empty page, or a layout a person cannot read at a glance; leaves
# a screenshot of the first screen for a person to look at.
#
#   scripts/html-check.sh REPORT.html SHOT.png   check one report, screenshot into SHOT.png
#   scripts/html-check.sh --plot PLOT.svg SHOT.png
#                                                check one plot, screenshot into SHOT.png
#   scripts/html-check.sh --self-test            the check itself must fail on planted pages:
#                                                a console error, a fetch, a page that scrolls
#                                                sideways, a verdict below the first screen, a
#                                                plot whose text runs off the picture
#
# The report has no script (the measuring script below logs nothing), so any console message (an
# error, a blocked load, a measuring script that throws) is a failure:
# Chromium logs console messages to stderr (--enable-logging=stderr) as `INFO:CONSOLE...` with
# no level. Fetches are read from Chromium's network log (--log-net-log): a request whose
# network isolation key is the file:// page is the page's own (Chromium's background requests
# have none); every host name resolves to nothing (--host-resolver-rules), so nothing leaves
# the machine.
#
# Layout is measured in a copy of the page with a small script appended (the page itself stays
# script-free): it writes its measurements into the DOM, which `--dump-dom` prints; that run also
# gives the console and network logs. A report must
# not be wider than the 1400 px window (document.documentElement.scrollWidth <= innerWidth), its
# `#verdict` and `#summary` sections must lie inside the first 900 px, and nothing in them may
# scroll sideways. A plot must fit the window, and every text of it must lie inside the picture
# and overlap no other text (a legend that overflows, names drawn over each other).
#
# Needs `chromium` (Debian package chromium); exits 1 on a failed check, 2 on bad usage.
set -euo pipefail

chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium_bin" ]; then
  echo "html-check: chromium not found (install the Debian package chromium)" >&2
  exit 2
fi

WIDTH=1400
HEIGHT=900

flags() { # WORKDIR
  printf '%s\n' --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$1/profile" --host-resolver-rules="MAP * ~NOTFOUND" \
    --hide-scrollbars --virtual-time-budget=5000 --enable-logging=stderr --v=0 \
    --window-size="$WIDTH,$HEIGHT"
}

# The measuring script for a report: one `fail: …` line per broken rule, then the figures.
report_js='
(function () {
  // H is the height of the screenshot: with --dump-dom the window keeps room for browser
  // chrome, so innerHeight is less than --window-size says; positions at scroll 0 do not
  // depend on it.
  var d = document.documentElement, out = [], W = window.innerWidth, H = SHOT_HEIGHT;
  out.push("window " + W + "x" + H + ", page width " + d.scrollWidth);
  if (d.scrollWidth > W) out.push("fail: the page is " + d.scrollWidth + " px wide in a " + W + " px window: it scrolls sideways");
  ["verdict", "summary"].forEach(function (id) {
    var e = document.getElementById(id);
    if (!e) { out.push("fail: no #" + id + " section"); return; }
    var b = e.getBoundingClientRect();
    out.push(id + " " + Math.round(b.top) + "-" + Math.round(b.bottom) + " px");
    if (b.top < 0 || b.bottom > H) out.push("fail: #" + id + " spans " + Math.round(b.top) + "-" + Math.round(b.bottom) + " px: not inside the first screen (0-" + H + " px)");
    if (b.right > W) out.push("fail: #" + id + " ends at x " + Math.round(b.right) + ", past the window");
    e.querySelectorAll("*").forEach(function (x) {
      if (x.scrollWidth > x.clientWidth + 1 && getComputedStyle(x).overflowX != "visible")
        out.push("fail: in #" + id + " a " + x.tagName.toLowerCase() + " scrolls sideways (" + x.scrollWidth + " px in " + x.clientWidth + ")");
    });
  });
  var p = document.createElement("pre"); p.id = "layout-check"; p.textContent = out.join("\n");
  document.body.appendChild(p);
})();
'

# The measuring script for a plot page (the SVG inline): every text inside the picture, no two
# texts overlapping.
plot_js='
(function () {
  var d = document.documentElement, out = [], W = window.innerWidth;
  var svg = document.querySelector("svg");
  if (!svg) { out.push("fail: no svg"); }
  else {
    var s = svg.getBoundingClientRect();
    out.push("window " + W + ", picture " + Math.round(s.width) + "x" + Math.round(s.height) + ", page width " + d.scrollWidth);
    if (d.scrollWidth > W) out.push("fail: the page is " + d.scrollWidth + " px wide in a " + W + " px window");
    var boxes = [];
    svg.querySelectorAll("text").forEach(function (t) {
      var txt = t.textContent.trim(); if (!txt) return;
      var b = t.getBoundingClientRect();
      if (b.left < s.left - 1 || b.right > s.right + 1 || b.top < s.top - 1 || b.bottom > s.bottom + 1)
        out.push("fail: text \"" + txt + "\" runs off the picture (" + Math.round(b.left) + "," + Math.round(b.top) + "-" + Math.round(b.right) + "," + Math.round(b.bottom) + ")");
      boxes.push([txt, b]);
    });
    for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i][1], b = boxes[j][1];
      var w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 2 && h > 2) out.push("fail: texts \"" + boxes[i][0] + "\" and \"" + boxes[j][0] + "\" overlap");
    }
    out.push(boxes.length + " texts");
  }
  var p = document.createElement("pre"); p.id = "layout-check"; p.textContent = out.join("\n");
  document.body.appendChild(p);
})();
'

# measured PAGE JS OUT: a copy of PAGE with JS appended (its measurements end up in the DOM).
measured() {
  { cat "$1"; printf '<script>%s</script>\n' "${2//SHOT_HEIGHT/$HEIGHT}"; } >"$3"
}

# layout_of DOM: what the measuring script wrote into the dumped DOM.
layout_of() {
  sed -n '/<pre id="layout-check">/,/<\/pre>/p' "$1" |
    sed -e 's/.*<pre id="layout-check">//' -e 's/<\/pre>.*//' -e 's/&quot;/"/g' -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g'
}

# check PAGE SHOT [plot]: 0 when the page renders with no console error, fetches nothing, is
# not empty, and its layout holds.
check() {
  local page shot kind work log dom layout
  page=$(realpath "$1")
  shot=$2
  kind=${3:-report}
  work=$(mktemp -d)
  log="$work/console.log"
  dom="$work/dom.html"
  if [ "$kind" = plot ]; then
    # The picture inline in a page of its own, as the report shows it.
    { printf '<!DOCTYPE html><html><head><meta charset="utf-8"><title>plot</title></head><body style="margin:8px">\n'
      sed '1{/^<?xml/d}' "$page"
      printf '</body></html>\n'; } >"$work/plot.html"
    page="$work/plot.html"
  fi
  # Two Chromium runs a page: the screenshot of the page itself, then the DOM and network log
  # of its copy with the measuring script (which writes, fetches and logs nothing else), so the
  # console, fetch and layout checks share one run.
  if [ "$kind" = plot ]; then
    measured "$page" "$plot_js" "$work/measured.html"
  else
    measured "$page" "$report_js" "$work/measured.html"
  fi
  mapfile -t f < <(flags "$work")
  timeout 120 "$chromium_bin" "${f[@]}" --screenshot="$shot" "file://$page" 2>"$log" >/dev/null || true
  timeout 120 "$chromium_bin" "${f[@]}" --log-net-log="$work/net.json" --dump-dom \
    "file://$work/measured.html" 2>>"$log" >"$dom" || true
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
  if [ "$kind" = report ]; then
    if ! grep -q '<svg' "$dom" || ! grep -q 'id="summary"' "$dom"; then
      echo "html-check: $1: the rendered DOM has no summary section or no SVG ($(wc -c <"$dom") bytes)" >&2
      bad=1
    fi
  fi
  layout=$(layout_of "$dom")
  if [ -z "$layout" ]; then
    echo "html-check: $1: the layout could not be measured (no result in the DOM); chromium said:" >&2
    tail -5 "$log" >&2
    bad=1
  elif grep -q '^fail: ' <<<"$layout"; then
    echo "html-check: $1: layout at ${WIDTH}x$HEIGHT:" >&2
    grep '^fail: ' <<<"$layout" | sed 's/^fail: /  /' >&2
    bad=1
  else
    echo "html-check: $1: layout at ${WIDTH}x$HEIGHT: $(tr '\n' ';' <<<"$layout" | sed 's/;$//; s/;/; /g')"
  fi
  rm -rf "$work"
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # Enough text for a screenshot that is not empty, wrapping inside the window.
  filler=$(for i in $(seq 40); do printf '<p>%s</p>' "$(printf 'filler %.0s' $(seq 30))"; done)
  top='<section id="verdict"><p>verdict</p></section><section id="summary"><p>summary</p></section>'
  printf '<!DOCTYPE html><html><body>%s%s<svg width="10" height="10"></svg><script>console.warn("planted")</script></body></html>' "$top" "$filler" >"$tmp/error.html"
  printf '<!DOCTYPE html><html><head><style>@import url("https://fonts.example.invalid/x.css");</style></head><body>%s%s<svg width="10" height="10"></svg></body></html>' "$top" "$filler" >"$tmp/fetch.html"
  printf '<!DOCTYPE html><html><body>%s<div style="width:2400px">wide</div>%s<svg width="10" height="10"></svg></body></html>' "$top" "$filler" >"$tmp/wide.html"
  printf '<!DOCTYPE html><html><body><section id="summary"><p>summary</p></section><div style="height:1500px">%s</div><section id="verdict"><p>verdict</p></section>%s<svg width="10" height="10"></svg></body></html>' "$filler" "$filler" >"$tmp/low.html"
  printf '<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="600"><rect width="1000" height="600" fill="#fff"/><text x="950" y="300" font-size="20">a legend entry running off the picture</text><text x="100" y="100" font-size="20">one name</text><text x="110" y="100" font-size="20">over another</text>%s</svg>' \
    "$(for i in $(seq 40); do printf '<circle cx="%d" cy="%d" r="9" fill="#%02x4488"/>' $((i * 20)) $((i * 12)) $((i * 5)); done)" >"$tmp/plot.svg"
  # A clean page must pass, so that the refusals below are the planted faults'.
  printf '<!DOCTYPE html><html><body>%s%s<svg width="10" height="10"></svg></body></html>' "$top" "$filler" >"$tmp/good.html"
  if ! check "$tmp/good.html" "$tmp/good.png" report >"$tmp/good.out" 2>"$tmp/good.err"; then
    echo "html-check self-test: a clean page was refused:" >&2
    cat "$tmp/good.err" >&2
    exit 1
  fi
  echo "html-check self-test: clean page passed: $(cat "$tmp/good.out")"
  for case in "error:report:console messages" "fetch:report:the page fetched" \
    "wide:report:it scrolls sideways" "low:report:#verdict spans" \
    "plot:plot:runs off the picture"; do
    p=${case%%:*}
    rest=${case#*:}
    kind=${rest%%:*}
    why=${rest#*:}
    file="$tmp/$p.html"
    [ "$kind" = plot ] && file="$tmp/$p.svg"
    if check "$file" "$tmp/$p.png" "$kind" >"$tmp/$p.out" 2>"$tmp/$p.err"; then
      echo "html-check self-test: the $p page passed; the check does not catch it" >&2
      cat "$tmp/$p.out" >&2
      exit 1
    fi
    if ! grep -q -- "$why" "$tmp/$p.err"; then
      echo "html-check self-test: the $p page was refused, but not for \"$why\":" >&2
      cat "$tmp/$p.err" >&2
      exit 1
    fi
    # One fault each: one `html-check:` line, at most one layout rule broken.
    if [ "$kind" = report ] && { [ "$(grep -c '^html-check: ' "$tmp/$p.err")" -ne 1 ] ||
      [ "$(grep -c '^  ' "$tmp/$p.err")" -gt 1 ]; }; then
      echo "html-check self-test: the $p page was refused for more than its planted fault:" >&2
      cat "$tmp/$p.err" >&2
      exit 1
    fi
    echo "html-check self-test: $p page refused: $(grep -- "$why" "$tmp/$p.err" | head -1 | sed 's/^ *//')"
  done
  if ! grep -q 'overlap' "$tmp/plot.err"; then
    echo "html-check self-test: the plot's overlapping texts were not caught:" >&2
    cat "$tmp/plot.err" >&2
    exit 1
  fi
  exit 0
fi

kind=report
if [ "${1:-}" = "--plot" ]; then
  kind=plot
  shift
fi
if [ $# -ne 2 ]; then
  echo "usage: $0 REPORT.html SHOT.png | $0 --plot PLOT.svg SHOT.png | $0 --self-test" >&2
  exit 2
fi
if check "$1" "$2" "$kind"; then
  echo "html-check: $1 rendered in $("$chromium_bin" --version 2>/dev/null | head -1) at ${WIDTH}x$HEIGHT without console errors, fetches or layout faults; screenshot $2 ($(stat -c %s "$2") bytes)"
else
  exit 1
fi
