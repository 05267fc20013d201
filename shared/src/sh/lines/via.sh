# shellcheck shell=sh
# The line that asks a short link where the bytes go, then PUTs them there
# (`curl::upload_via_command`): @LINK@ is a quoted word, @PUT@ the PUT
# (`put.sh`) to "$u".
# shellcheck disable=SC2034 # u is read by @PUT@ once filled in
L=@LINK@; u=$(curl -fsS "$L") && @PUT@
