#!/bin/sh
# sluice: uploads every file of a batch still missing, each through its own
# upload link; run again, it sends only what is not stored yet. POSIX sh,
# curl and coreutils.
#
#   sh -c "$s" sluice BATCH_LINK ORIGIN PARTS_SHA256
#
# The line runs this script only if its SHA-256 is the one the line was
# issued with. What the server answers is data: `GET BATCH_LINK` lists the
# files still to send, one a line: path, upload link, size, parts, part
# size in MiB (tab-separated). Each link must be an upload link beside the
# batch's; a file in one PUT goes to the target its link answers (a URL
# under ORIGIN, at most the headers a presigned PUT signs), a file in parts
# through the parts script, run only if its SHA-256 is PARTS_SHA256.
set -eu
B=$1 O=$2 P=$3 K=4
I=${B%/b/*}
m=$(curl -fsS "$B") || { echo "sluice: this batch has expired or is unknown: call request_uploads again" >&2; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
printf '%s\n' "$m" | grep -v '^$' > "$d/list" || true
n=$(wc -l < "$d/list")
[ "$n" -gt 0 ] || { echo "sluice: every file of this batch is stored"; exit 0; }
# Sends file $1 (path) through link $2 in one PUT.
put() {
  t=$(curl -fsS "$2/to") || return 1
  set --
  first=1
  while IFS= read -r line || [ -n "$line" ]; do
    [ -n "$line" ] || continue
    if [ "$first" = 1 ]; then u=$line first=0; continue; fi
    name=${line%%:*} value=${line#*: }
    case "$(printf '%s' "$name" | tr '[:upper:]' '[:lower:]')" in
    content-type|if-none-match|x-amz-checksum-sha256|x-amz-sdk-checksum-algorithm) ;;
    *) echo "sluice: its target asks for the header $name: refused" >&2; return 1 ;;
    esac
    case "$value" in *[![:print:]]*) echo "sluice: its target gives $name an unexpected value: refused" >&2; return 1 ;; esac
    set -- "$@" -H "$name: $value"
  done <<T
$t
T
  case "$u" in "$O"/*) ;; *) echo "sluice: its target is not under $O: refused" >&2; return 1 ;; esac
  curl -g --fail-with-body -sS -o /dev/null -X PUT "$@" -T "$f" "$u"
}
# Sends one file of the list: path, link, size, parts, part MiB.
one() {
  f=./$1
  case "$2" in "$I"/u/*) ;; *) echo "sluice: $1: its link is not an upload link of $I: refused" >&2; return 1 ;; esac
  [ -f "$f" ] || { echo "sluice: $1: there is no such file here: run the line where the files are" >&2; return 1; }
  [ "$(wc -c < "$f")" -eq "$3" ] || { echo "sluice: $1 is not $3 bytes: it is not the file asked for" >&2; return 1; }
  if [ "$4" -gt 0 ]; then
    s=$(curl -fsS "$2/sh") || return 1
    [ "$(printf %s "$s" | sha256sum | cut -c1-64)" = "$P" ] || { echo "sluice: $1: $2/sh is not the parts script of this release: not run" >&2; return 1; }
    sh -c "$s" sluice "$f" "$2" "$4" "$3" "$5" "$O" > /dev/null
  else
    put "$1" "$2"
  fi
}
tab=$(printf '\t')
# Files in one PUT, K at a time (a slot is taken from a FIFO before a file
# starts and given back when it ends); then files in parts one after
# another, each with its own parts in flight.
mkfifo "$d/slots"
exec 3<>"$d/slots"
k=0
while [ "$k" -lt "$K" ]; do echo >&3; k=$((k + 1)); done
i=0
while IFS=$tab read -r path link size parts mib; do
  i=$((i + 1))
  [ "$parts" = 0 ] || continue
  read -r _ <&3
  (
    trap 'echo >&3' EXIT
    if one "$path" "$link" "$size" "$parts" "$mib"; then
      echo "sluice: $path sent" >&2; : > "$d/$i.ok"
    fi
  ) &
done < "$d/list"
wait
exec 3>&-
i=0
while IFS=$tab read -r path link size parts mib; do
  i=$((i + 1))
  [ "$parts" != 0 ] || continue
  if one "$path" "$link" "$size" "$parts" "$mib" < /dev/null; then
    echo "sluice: $path sent" >&2; : > "$d/$i.ok"
  fi
done < "$d/list"
ok=$(find "$d" -name '*.ok' | wc -l)
if [ "$ok" -eq "$n" ]; then
  echo "sluice: $n files sent"
else
  echo "sluice: $((n - ok)) of $n files were not sent: run the same line again to send them" >&2
  exit 1
fi
