# shellcheck shell=sh
# sluice: the part protocol's target, checked the one way every client
# checks it (the grammar is in docs/ARCHITECTURE.md, "The part target"; the
# page's upload.js checks the same, and one test holds all three to it).
#
#   target FILE ORIGIN
#
# FILE holds the answer: the URL on the first line, under ORIGIN; then
# headers, one a line, "Name: value", each named at most once (any case),
# each one a presigned PUT signs: Content-Type (any value), If-None-Match
# (`*`), x-amz-checksum-sha256 (base64), x-amz-sdk-checksum-algorithm
# (letters and digits); blank lines are skipped. At most 4096 bytes, every byte printable ASCII or a line feed
# (no CR, tab, NUL or other control, nothing past ASCII). Sets u to the URL
# and h to the header lines checked; refused (1, saying why) otherwise.
# What it passes on is data: a value becomes one -H argument of curl.
target() {
  tgt_no() { echo "sluice: its target $1: refused" >&2; return 1; }
  [ "$(wc -c < "$1")" -le 4096 ] || { tgt_no "is longer than 4096 bytes"; return 1; }
  [ "$(LC_ALL=C tr -d '\n\040-\176' < "$1" | wc -c)" -eq 0 ] || { tgt_no "has a byte that is not printable ASCII"; return 1; }
  u='' h='' tgt_seen=' '
  while IFS= read -r tgt_l || [ -n "$tgt_l" ]; do
    if [ -z "$u" ]; then
      case "$tgt_l" in "$2"/*) ;; *) tgt_no "is not under $2"; return 1 ;; esac
      case "$tgt_l" in *' '*) tgt_no "has a space in its URL"; return 1 ;; esac
      u=$tgt_l
      continue
    fi
    [ -n "$tgt_l" ] || continue
    case "$tgt_l" in *': '*) ;; *) tgt_no "has a line that is not a header"; return 1 ;; esac
    tgt_name=$(printf '%s' "${tgt_l%%: *}" | LC_ALL=C tr '[:upper:]' '[:lower:]')
    tgt_v=${tgt_l#*: }
    case "$tgt_name" in
    content-type|if-none-match|x-amz-checksum-sha256|x-amz-sdk-checksum-algorithm) ;;
    *) tgt_no "asks for the header ${tgt_l%%: *}"; return 1 ;;
    esac
    case "$tgt_seen" in *" $tgt_name "*) tgt_no "names ${tgt_l%%: *} twice"; return 1 ;; esac
    tgt_ok=0
    case "$tgt_name:$tgt_v" in
    *:|x-amz-checksum-sha256:*[!A-Za-z0-9+/=]*|x-amz-sdk-checksum-algorithm:*[!A-Za-z0-9]*) ;;
    if-none-match:\*|content-type:*|x-amz-checksum-sha256:*|x-amz-sdk-checksum-algorithm:*) tgt_ok=1 ;;
    esac
    [ "$tgt_ok" = 1 ] || { tgt_no "gives ${tgt_l%%: *} an unexpected value"; return 1; }
    tgt_seen="$tgt_seen$tgt_name "
    h="$h$tgt_l
"
  done < "$1"
  [ -n "$u" ] || { tgt_no "is empty"; return 1; }
}
