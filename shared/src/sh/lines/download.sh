# shellcheck shell=sh
# The line that downloads a file resumably and verified
# (`curl::download_command`): @FILE@ and @URL@ are quoted words, @PART@ a
# partial file's plain name, @SIZE@ digits, @SHA256@ hex.
# shellcheck disable=SC2170 # @SIZE@ is digits once filled in
f=@FILE@; p=@PART@; { [ -f $p ] && [ "$(wc -c < $p)" -eq @SIZE@ ] || curl -fsSL -C - -o $p @URL@; } && if [ "$(sha256sum < $p | cut -c1-64)" = @SHA256@ ]; then mv -f $p "$f"; else rm -f $p; echo "$p: not the file's sha256, removed: ask for a new link" >&2; false; fi
