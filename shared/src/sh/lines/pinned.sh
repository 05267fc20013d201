# shellcheck shell=sh
# The line that runs the script its link answers only if it is this
# release's (`curl::pinned_script_line`): @LINK@ is a quoted word, @SHA256@
# hex, @ARGS@ the script's arguments, each a quoted word, digits or "$L".
L=@LINK@; s=$(curl -fsS "$L/sh") && if [ "$(printf %s "$s" | sha256sum | cut -c1-64)" = @SHA256@ ]; then sh -c "$s" sluice @ARGS@; else echo "sluice: $L/sh is not the script this line was issued with: not run" >&2; false; fi
