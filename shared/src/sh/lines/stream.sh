# shellcheck shell=sh
# The line that uploads a file as one resumable (tus 1.0) stream
# (`curl::stream_command`): @LINK@ and @FILE@ are quoted words, @SIZE@
# digits, @INSTEAD@ plain words with no quote. `o` is the HEAD's status and
# its Upload-Offset, digits only: `000` when nothing answered.
# shellcheck disable=SC1083,SC2254,SC2086 # -w's braces are curl's; $S and $o are digits only
L=@LINK@; f=@FILE@; S=@SIZE@; o=$(curl -sSIo/dev/null -w%{http_code}%header{upload-offset} "$L"|tr -dc 0-9); case $o in 200$S) echo sluice: stored;; 200?*) curl --fail-with-body -sS -X PATCH -H Tus-Resumable:1.0.0 -H Content-Type:application/offset+octet-stream -H Upload-Offset:${o#???} -C ${o#???} -T "$f" "$L" -w "sluice: %header{upload-offset}/$S stored\n";; 200|000) echo sluice: no Upload-Offset from "${L%/u/*}", unreachable or a proxy drops it: allow it, or @INSTEAD@>&2; false;; *) echo sluice: HTTP $o>&2; false;; esac
