# shellcheck shell=sh
# The line that uploads a file as one resumable (tus 1.0) stream
# (`curl::stream_command`): @LINK@ and @FILE@ are quoted words, @SIZE@ digits.
# shellcheck disable=SC2015 # echo does not fail
L=@LINK@; f=@FILE@; S=@SIZE@; H=Tus-Resumable:1.0.0; o=$(curl -fsSI -H $H "$L" | grep -i ^upload-offset | tr -dc 0-9) && { [ "$o" = $S ] && echo sluice: stored || curl --fail-with-body -sS -X PATCH -H $H -H Content-Type:application/offset+octet-stream -H "Upload-Offset: $o" -C "$o" -T "$f" "$L" -w "sluice: %header{upload-offset} of $S stored\n"; }
