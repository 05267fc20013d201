#!/bin/sh
# sluice: uploads a file in parts through its upload link; run again, it
# sends only the parts not stored yet. POSIX sh, curl and coreutils (it
# hashes with openssl where there is one, four times as fast here, and with
# shasum where there is no sha256sum, as on macOS).
#
#   sh -c "$s" sluice FILE LINK PARTS SIZE PART_MIB ORIGIN
#
# The upload line runs this script only if its SHA-256 is the one the line
# was issued with (one per release), so the server cannot change what runs.
# The numbers are checked as plain digits and must agree with each other.
# What the server answers is data: each part's target is checked by
# `target` (the part protocol's one grammar, sent ahead of this script: a
# URL under ORIGIN, at most the headers a presigned PUT signs); nothing it
# says becomes an option of curl. A host it cannot reach is told by the
# line that runs it.
set -eu
# What the server or the storage answers "not now" (503 and its kin: 408,
# 429, 500, 502, 504; S3's SlowDown) is asked again, after its Retry-After,
# a few times within a minute, before the line gives up.
ask() { curl --retry 4 --retry-max-time 60 "$@"; }
# K parts in flight: enough to keep the hashing, the network and the store
# busy together, few enough to stay within one user's share of transfers.
f=$1 L=$2 N=$3 S=$4 M=$5 O=$6 K=4
# Every number is plain digits before it reaches $(( )): under bash as sh
# (macOS, Fedora, Arch) arithmetic runs the $( ) of an array subscript.
for v in "$N" "$S" "$M"; do
  case "$v" in ''|*[!0-9]*|0?*|????????????????*) echo "sluice: a number this line was given is not plain digits: refused, nothing sent" >&2; exit 1 ;; esac
done
if [ "$M" -eq 0 ] || [ "$N" -gt 10000 ] || [ "$N" -ne $(( (S + M * 1048576 - 1) / (M * 1048576) )) ]; then
  echo "sluice: $N parts of $M MiB do not make $S bytes: refused, nothing sent" >&2; exit 1
fi
[ -f "$f" ] || { echo "sluice: there is no file $f here: run the line where the file is, or give its path" >&2; exit 1; }
[ "$(wc -c < "$f")" -eq "$S" ] || { echo "sluice: $f is not $S bytes: it is not the file this upload was asked for" >&2; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# The parts stored already; a link expired or unknown (4xx) says so, any
# other failure (still "not now" after the retries) in the server's words.
c=$(ask -sS -o "$d/have" -w '%{http_code}' "$L/parts") || exit 1
case "$c" in
200) ;;
4*) echo "sluice: this upload has expired or is unknown: call request_upload again" >&2; exit 1 ;;
*) cat "$d/have" >&2; echo >&2; exit 1 ;;
esac
have=" $(tr '\n' ' ' < "$d/have") "
if command -v openssl >/dev/null 2>&1; then H='openssl dgst -sha256 -r'
elif command -v sha256sum >/dev/null 2>&1; then H=sha256sum
else H='shasum -a 256'; fi
# Part $1, to stdout or to the file dd is given after it.
part() { n=$1; shift; dd if="$f" bs=1048576 skip=$(( (n - 1) * M )) count="$M" "$@" 2>/dev/null; }
# Sends part $1 (in a subshell of its own: it runs in the background).
send() {
  i=$1
  len=$(( i < N ? M * 1048576 : S - (N - 1) * M * 1048576 ))
  # The part is copied once into its slot's file, hashed there and sent
  # from there: reading it twice through pipes cost this client a quarter
  # more CPU in all. Each slot's file is written over in place,
  # so that its pages are reused. Where there is no room for the copies,
  # this part and the ones after it go through pipes.
  t=$d/s$slot
  if [ ! -e "$d/piped" ]; then
    if ! { if [ "$i" -lt "$N" ]; then part "$i" of="$t" conv=notrunc; else part "$i" of="$t"; fi; } ||
      [ "$(wc -c < "$t")" -ne "$len" ]; then
      : > "$d/piped"
      rm -f "$t"
    fi
  fi
  [ ! -e "$d/piped" ] || t=''
  if [ -n "$t" ]; then h=$($H < "$t" | cut -c1-64); else h=$(part "$i" | $H | cut -c1-64); fi
  ask -fsS -X POST -o "$d/$i.t" "$L/parts/$i?sha256=$h"
  u='' h=''
  target "$d/$i.t" "$O" || exit 1
  set --
  while IFS= read -r line; do [ -z "$line" ] || set -- "$@" -H "$line"; done <<H
$h
H
  if [ -n "$t" ]; then
    ask -g --fail-with-body -sS -X PUT -T "$t" "$@" "$u"
  else
    part "$i" | curl -g --fail-with-body -sS -X PUT -T - -H "Content-Length: $len" -H 'Transfer-Encoding:' "$@" "$u"
  fi
  : > "$d/$i.ok"
  echo "sluice: part $i of $N sent" >&2
}
# K parts in flight at all times, not K at a time: a slot (its number) is
# taken from a FIFO before a part starts and given back when it ends, so one slow part
# holds up no other and the hashing, the network and the store overlap.
mkfifo "$d/slots"
exec 3<>"$d/slots"
k=0
while [ "$k" -lt "$K" ]; do echo "$k" >&3; k=$((k + 1)); done
i=1
while [ "$i" -le "$N" ]; do
  case "$have" in *" $i "*) ;; *)
    read -r slot <&3
    [ ! -e "$d/failed" ] || break
    # The part's own shell gives its slot back however it ends (set -e
    # ends it at the first failure), and marks the run failed if the
    # part was not stored, so that no further part starts.
    (
      trap '[ -e "$d/$i.ok" ] || : > "$d/failed"; echo "$slot" >&3' EXIT
      send "$i"
    ) &
  ;; esac
  i=$((i + 1))
done
wait
exec 3>&-
j=1
while [ "$j" -le "$N" ]; do
  case "$have" in *" $j "*) ;; *)
    [ -e "$d/$j.ok" ] || { echo "sluice: part $j was not stored: run the same line again to resume" >&2; exit 1; } ;;
  esac
  j=$((j + 1))
done
while :; do
  c=$(ask -sS -o "$d/done" -w '%{http_code}' -X POST "$L/complete") || exit 1
  case "$c" in
  200) cat "$d/done"; echo; exit 0 ;;
  202) echo "sluice: verifying the whole file's sha256…" >&2 ;;
  *) cat "$d/done" >&2; echo >&2; exit 1 ;;
  esac
done
