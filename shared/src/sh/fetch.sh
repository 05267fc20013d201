#!/bin/sh
# sluice: saves every file of a download batch into the current directory,
# each verified against its SHA-256; run again with a new line, it fetches
# only what is not here yet, continuing a partial file. POSIX sh, curl and
# coreutils.
#
#   sh -c "$s" sluice LIST_LINK MANIFEST_SHA256
#
# The line runs this script only if its SHA-256 is the one the line was
# issued with, and gives it the digest of the batch's manifest. `GET
# LIST_LINK` (once: it is single-use) answers one line a file: sha256, size,
# name, a single-use download link beside the list's (`x`: deleted or
# expired), tab-separated. What it answers is data, checked before anything
# is written: the first three fields of every line are the manifest, whose
# SHA-256 must be MANIFEST_SHA256 (the server cannot name another file to
# write); every name is plain (no `/`, not starting with `.` or `-`, no
# control character) and every number plain digits. A file is fetched into
# a partial file of the line's own (`.sluice-<digest>.part`, never a file
# of the user's) and renamed only once verified; a name already here is
# never overwritten: the same bytes are kept, other bytes are left alone and
# reported.
set -eu
G=$1 D=$2
R=${G%/g/*}
if command -v sha256sum >/dev/null 2>&1; then H=sha256sum; else H='shasum -a 256'; fi
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
curl -fsS -o "$d/list" "$G" || { echo "sluice: this line was used already or has expired: call get_download_urls again" >&2; exit 1; }
[ "$(cut -f1-3 < "$d/list" | $H | cut -c1-64)" = "$D" ] || { echo "sluice: the list is not the manifest this line was issued with: nothing saved" >&2; exit 1; }
tab=$(printf '\t')
# Every line checked before any file is written: a refusal saves nothing.
bad() { echo "sluice: the list $1: refused, nothing saved" >&2; exit 1; }
while IFS=$tab read -r h z f u; do
  case "$h" in *[!0-9a-f]*) bad "has a digest that is not hex" ;; esac
  [ "${#h}" -eq 64 ] || bad "has a digest that is not 64 digits"
  case "$z" in ''|*[!0-9]*|0?*|????????????????*) bad "has a size that is not plain digits" ;; esac
  case "$f" in ''|.*|-*|*/*|*[[:cntrl:]]*) bad "names a file that is not a plain name" ;; esac
  case "$u" in x|"$R"/l/*) ;; *) bad "has a link that is not a download link of $R" ;; esac
done < "$d/list"
n=0 bad=0
while IFS=$tab read -r h z f u; do
  n=$((n + 1))
  [ "$u" != x ] || { echo "sluice: $f was deleted or has expired" >&2; bad=$((bad + 1)); continue; }
  if [ -e "$f" ]; then
    if [ "$($H < "$f" | cut -c1-64)" = "$h" ]; then echo "sluice: $f is here already" >&2; continue; fi
    echo "sluice: $f is here and is another file: not overwritten (move it away and ask again)" >&2
    bad=$((bad + 1)); continue
  fi
  p=.sluice-$(printf %s "$h" | cut -c1-16).part
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
