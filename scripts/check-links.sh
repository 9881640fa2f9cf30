#!/usr/bin/env bash
# Fails on a broken relative link in the repository's Markdown: every `[text](path)`,
# `[text](path#anchor)`, `[text](#anchor)` and `[ref]: path` in a tracked *.md file must name a
# file or directory that exists (resolved from the linking file's directory), and an anchor must
# name a heading of the target Markdown file (GitHub's slugs: lower case, punctuation dropped,
# spaces to hyphens, `-1`, `-2` for repeats). Links with a scheme (https:, mailto:) are not
# fetched. Code blocks and code spans are skipped.
#
#   scripts/check-links.sh              # every tracked *.md (untracked ones too, not ignored ones)
#   scripts/check-links.sh FILE.md ...  # only these
#   scripts/check-links.sh --self-test  # shows that it finds a broken path and a broken anchor
#
# Exit 0: every link resolves; 1: broken links, listed as FILE:LINE: LINK (why); 2: bad usage.
# Needs only bash, git and perl (perl-base is part of every Debian install).
set -euo pipefail
cd "$(dirname "$0")/.."

check() { # FILE... -> report on stdout, exit status 1 when a link is broken
  perl -CSD -Mutf8 -e '
    use strict; use warnings;
    use File::Basename qw(dirname);
    use File::Spec;
    my %slugs;  # file -> { slug => 1 }
    sub slugs_of {
      my ($f) = @_;
      return $slugs{$f} if $slugs{$f};
      my %s; my %seen;
      open(my $h, "<:encoding(UTF-8)", $f) or return $slugs{$f} = {};
      my $fence = "";
      while (my $l = <$h>) {
        if ($l =~ /^\s{0,3}(`{3,}|~{3,})/) {
          my $m = $1;
          if ($fence eq "") { $fence = substr($m, 0, 3) } elsif (substr($m, 0, 3) eq $fence) { $fence = "" }
          next;
        }
        next if $fence ne "";
        $s{lc $1} = 1 while $l =~ /<a\s+(?:name|id)="([^"]+)"/g;
        next unless $l =~ /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
        my $t = $1;
        $t =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;   # a link in a heading keeps its text
        $t =~ s/<[^>]+>//g;                   # inline HTML
        $t = lc $t;
        $t =~ s/[^\p{Word}\- ]//g;            # GitHub: drop all but word characters, - and space
        $t =~ s/ /-/g;
        my $slug = $t;
        $slug = $t . "-" . $seen{$t} if $seen{$t};
        $seen{$t}++;
        $s{$slug} = 1;
      }
      return $slugs{$f} = \%s;
    }
    my $bad = 0;
    for my $file (@ARGV) {
      open(my $h, "<:encoding(UTF-8)", $file) or do { print "$file: cannot read: $!\n"; $bad = 1; next };
      my $dir = dirname($file);
      my $fence = ""; my $n = 0;
      while (my $l = <$h>) {
        $n++;
        if ($l =~ /^\s{0,3}(`{3,}|~{3,})/) {
          my $m = $1;
          if ($fence eq "") { $fence = substr($m, 0, 3) } elsif (substr($m, 0, 3) eq $fence) { $fence = "" }
          next;
        }
        next if $fence ne "";
        next if $l =~ /^(?: {4}|\t)/ && $l !~ /^\s*[-*|>]/;   # indented code block
        (my $text = $l) =~ s/(`+)(?:(?!\1).)+?\1//g;          # code spans
        my @dests;
        push @dests, $1 while $text =~ /\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g;
        push @dests, $1 if $text =~ /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/;
        for my $d (@dests) {
          next if $d eq "" || $d =~ /^[A-Za-z][A-Za-z0-9+.-]*:/ || $d =~ m{^//};
          my ($path, $anchor) = split /#/, $d, 2;
          $path =~ s/%20/ /g;
          my $target = $path eq "" ? $file : File::Spec->catfile($dir, $path);
          if ($path ne "" && $path =~ m{^/}) {
            print "$file:$n: $d (absolute path: link relative to this file)\n"; $bad = 1; next;
          }
          unless (-e $target) { print "$file:$n: $d (no such file: $target)\n"; $bad = 1; next }
          next unless defined $anchor && $anchor ne "";
          if (-d $target) { print "$file:$n: $d (an anchor into a directory)\n"; $bad = 1; next }
          next unless $target =~ /\.md$/i;
          unless (slugs_of($target)->{lc $anchor}) {
            print "$file:$n: $d (no heading with anchor #$anchor in $target)\n"; $bad = 1;
          }
        }
      }
    }
    exit($bad);
  ' "$@"
}

if [ "${1:-}" = "--self-test" ]; then
  t=$(mktemp -d)
  trap 'rm -rf "$t"' EXIT
  mkdir -p "$t/docs"
  printf '# Top\n\n## Two words, and `code`\n\n## Repeat\n\n## Repeat\n' > "$t/docs/a.md"
  printf '[ok](docs/a.md) [ok](docs/a.md#top) [ok](docs/a.md#two-words-and-code) [ok](docs/a.md#repeat-1) [ok](docs/) [web](https://example.com/x)\n`[not a link](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n' > "$t/good.md"
  printf 'fine [a](docs/a.md)\n[missing](docs/b.md)\n[bad anchor](docs/a.md#nope)\n[bad self](#nope)\n' > "$t/bad.md"
  out=$(cd "$t" && check good.md) || { echo "self-test: good.md was reported broken:"; echo "$out"; exit 1; }
  if out=$(cd "$t" && check bad.md); then
    echo "self-test: bad.md passed, but it has three broken links"; exit 1
  fi
  [ "$(printf '%s\n' "$out" | grep -c '^bad.md:')" = 3 ] || { echo "self-test: expected 3 broken links in bad.md, got:"; echo "$out"; exit 1; }
  echo "check-links self-test: ok (found: $(printf '%s' "$out" | tr '\n' ';'))"
  exit 0
fi

case "${1:-}" in -*) echo "usage: $0 [--self-test | FILE.md ...]" >&2; exit 2 ;; esac
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.md' | sort)
fi
if out=$(check "${files[@]}"); then
  echo "check-links: ${#files[@]} Markdown files, every relative link resolves"
else
  printf '%s\n' "$out"
  echo "check-links: broken relative links above (in ${#files[@]} Markdown files)" >&2
  exit 1
fi
