#!/bin/sh
# sluice: saves every file of a download batch into the current directory,
# each verified against its SHA-256; run again with a new line, it fetches
# only what is not here yet, continuing a partial file. POSIX sh, curl and
# coreutils.
#
#   sh -c "$s" sluice LIST_LINK
#
# The line runs this script only if its SHA-256 is the one the line was
# issued with. `GET LIST_LINK` (once: it is single-use) answers one line a
# file: sha256, size, name, a single-use download link beside the list's
# (tab-separated). A name already here is never overwritten: the same bytes
# are kept, other bytes are left alone and reported.
set -eu
G=$1
R=${G%/g/*}
if command -v sha256sum >/dev/null 2>&1; then H=sha256sum; else H='shasum -a 256'; fi
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
curl -fsS -o "$d/list" "$G" || { echo "sluice: this line was used already or has expired: call get_download_urls again" >&2; exit 1; }
tab=$(printf '\t')
n=0 bad=0
while IFS=$tab read -r h z f u; do
  [ -n "$h" ] || continue
  n=$((n + 1))
  case "$u" in "$R"/l/*) ;; *) echo "sluice: $f: its link is not a download link of $R: refused" >&2; bad=$((bad + 1)); continue ;; esac
  case "$f" in ''|.|..|*/*|-*) echo "sluice: $f: not a plain file name: refused" >&2; bad=$((bad + 1)); continue ;; esac
  if [ -e "$f" ]; then
    if [ "$($H < "$f" | cut -c1-64)" = "$h" ]; then echo "sluice: $f is here already" >&2; continue; fi
    echo "sluice: $f is here and is another file: not overwritten (move it away and ask again)" >&2
    bad=$((bad + 1)); continue
  fi
  p="$f.part"
  { [ -f "$p" ] && [ "$(wc -c < "$p")" -eq "$z" ]; } || curl -fsSL -C - -o "$p" "$u" < /dev/null || { bad=$((bad + 1)); continue; }
  if [ "$($H < "$p" | cut -c1-64)" = "$h" ]; then
    mv "$p" "$f"; echo "sluice: $f saved" >&2
  else
    rm -f "$p"; echo "sluice: $f: not the file's sha256, removed" >&2; bad=$((bad + 1))
  fi
done < "$d/list"
if [ "$bad" -eq 0 ]; then
  echo "sluice: $n files here"
else
  echo "sluice: $bad of $n files are not here: call get_download_urls again for a new line" >&2
  exit 1
fi
