#!/bin/sh
# sluice: uploads every file of a batch still missing, each through its own
# upload link; run again, it sends only what is not stored yet. POSIX sh,
# curl and coreutils.
#
#   sh -c "$s" sluice BATCH_LINK ORIGIN PARTS_SHA256 MANIFEST_SHA256
#
# The line runs this script only if its SHA-256 is the one the line was
# issued with, and gives it the digest of the batch's manifest. What the
# server answers is data, checked before anything is read or sent:
# `GET BATCH_LINK` lists every file of the batch, one a line: sha256, size,
# path, then its upload link (`-`: stored already; `x`: deleted or
# expired) and how it goes: its part size in MiB, 0 for one PUT, or `s`
# for one resumable (tus) stream where sluice receives the bytes,
# tab-separated. The first
# three fields of every line are the manifest: their SHA-256 must be
# MANIFEST_SHA256, so the server cannot name another file to read. Every
# path must be plain (relative, no `.` or `..` part, no part starting with
# `.` or `-`, no control character) and every number plain digits. Each link
# must be an upload link beside the batch's; a file in one PUT goes to the
# target its link answers (checked by `target`, sent ahead of this script:
# a URL under ORIGIN, at most the headers a presigned PUT signs), a stream to its link from where it stands (the
# offset taken as digits only), a file in parts through the parts script,
# run only if its SHA-256 is PARTS_SHA256.
set -eu
B=$1 O=$2 P=$3 D=$4 K=4
I=${B%/b/*}
if command -v sha256sum >/dev/null 2>&1; then H=sha256sum; else H='shasum -a 256'; fi
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
curl -fsS -o "$d/list" "$B" || { echo "sluice: this batch has expired or is unknown: call request_uploads again" >&2; exit 1; }
[ "$(cut -f1-3 < "$d/list" | $H | cut -c1-64)" = "$D" ] || { echo "sluice: the batch's list is not the manifest this line was issued with: nothing sent" >&2; exit 1; }
tab=$(printf '\t')
# Every line checked before any file is read: a refusal sends nothing.
bad() { echo "sluice: the batch's list $1: refused, nothing sent" >&2; exit 1; }
n=0 gone=0
while IFS=$tab read -r h z p u m; do
  case "$h" in *[!0-9a-f]*) bad "has a digest that is not hex" ;; esac
  [ "${#h}" -eq 64 ] || bad "has a digest that is not 64 digits"
  case "$z" in ''|*[!0-9]*|0?*|????????????????*) bad "has a size that is not plain digits" ;; esac
  case "$m" in s) ;; ''|*[!0-9]*|0?*|??????*) bad "has a part size that is not plain digits" ;; esac
  case "$p" in ''|/*|*//*|*[[:cntrl:]]*) bad "names a path that is not plain" ;; esac
  case "/$p" in */.*|*/-*) bad "names a path with a part that is hidden or starts with -" ;; esac
  case "$u" in -) ;; x) gone=$((gone + 1)) ;; "$I"/u/*) n=$((n + 1)) ;; *) bad "has a link that is not an upload link of $I" ;; esac
done < "$d/list"
[ "$gone" -eq 0 ] || echo "sluice: $gone files of this batch were deleted or have expired: call request_uploads again for them" >&2
[ "$n" -gt 0 ] || { [ "$gone" -eq 0 ] || exit 1; echo "sluice: every file of this batch is stored"; exit 0; }
# Sends file $1 (path) through link $2 in one PUT, to the target its link
# answers (`target`: the part protocol's grammar).
put() {
  t=$(mktemp "$d/t.XXXXXX")
  curl -fsS -o "$t" "$2/to" || return 1
  u='' h=''
  target "$t" "$O" || return 1
  set --
  while IFS= read -r line; do [ -z "$line" ] || set -- "$@" -H "$line"; done <<H
$h
H
  curl -g --fail-with-body -sS -o /dev/null -X PUT "$@" -T "$f" "$u"
}
# Sends file $1 (path) of $3 bytes through link $2 as one resumable (tus)
# stream: from where the upload stands, nothing when it is whole.
T='Tus-Resumable: 1.0.0'
stream() {
  o=$(curl -fsSI -o /dev/null -w '%header{upload-offset}' "$2" | tr -dc 0-9)
  [ -n "$o" ] || { echo "sluice: $1: no Upload-Offset came back from its link (used or expired, or a proxy drops the header), so nothing was sent" >&2; return 1; }
  [ "$o" != "$3" ] || return 0
  curl -g --fail-with-body -sS -o /dev/null -X PATCH -H "$T" -H 'Content-Type: application/offset+octet-stream' \
    -H "Upload-Offset: $o" -C "$o" -T "$f" "$2"
}
# Sends one file of the list: path, link, size, how (all checked
# above). The number of parts is counted here, from the size and the part
# size, never taken from the list.
one() {
  f=./$1
  [ -f "$f" ] || { echo "sluice: $1: there is no such file here: run the line where the files are" >&2; return 1; }
  [ "$(wc -c < "$f")" -eq "$3" ] || { echo "sluice: $1 is not $3 bytes: it is not the file asked for" >&2; return 1; }
  if [ "$4" = s ]; then
    stream "$1" "$2" "$3"
  elif [ "$4" -gt 0 ]; then
    c=$(( ($3 + $4 * 1048576 - 1) / ($4 * 1048576) ))
    [ "$c" -le 10000 ] || { echo "sluice: $1: more than 10000 parts: refused" >&2; return 1; }
    s=$(curl -fsS "$2/sh") || return 1
    [ "$(printf %s "$s" | $H | cut -c1-64)" = "$P" ] || { echo "sluice: $1: $2/sh is not the parts script of this release: not run" >&2; return 1; }
    sh -c "$s" sluice "$f" "$2" "$c" "$3" "$4" "$O" > /dev/null
  else
    put "$1" "$2"
  fi
}
# Files in one PUT or one stream, K at a time (a slot is taken from a FIFO
# before a file starts and given back when it ends); then files in parts
# one after another, each with its own parts in flight.
mkfifo "$d/slots"
exec 3<>"$d/slots"
k=0
while [ "$k" -lt "$K" ]; do echo >&3; k=$((k + 1)); done
i=0
while IFS=$tab read -r h z path link mib; do
  i=$((i + 1))
  case "$link" in -|x) continue ;; esac
  case "$mib" in 0|s) ;; *) continue ;; esac
  read -r _ <&3
  (
    trap 'echo >&3' EXIT
    if one "$path" "$link" "$z" "$mib"; then
      echo "sluice: $path sent" >&2; : > "$d/$i.ok"
    fi
  ) &
done < "$d/list"
wait
exec 3>&-
i=0
while IFS=$tab read -r h z path link mib; do
  i=$((i + 1))
  case "$link" in -|x) continue ;; esac
  case "$mib" in 0|s) continue ;; esac
  if one "$path" "$link" "$z" "$mib" < /dev/null; then
    echo "sluice: $path sent" >&2; : > "$d/$i.ok"
  fi
done < "$d/list"
ok=$(find "$d" -name '*.ok' | wc -l)
if [ "$ok" -eq "$n" ] && [ "$gone" -eq 0 ]; then
  echo "sluice: $n files sent"
elif [ "$ok" -eq "$n" ]; then
  exit 1
else
  echo "sluice: $((n - ok)) of $n files were not sent: run the same line again to send them" >&2
  exit 1
fi
