# shellcheck shell=sh
# A line that, failing, names the origin it was reaching if it cannot reach
# it (`curl::or_unreachable`): @LINE@ is the line, @ORIGIN@ a shell word,
# @INSTEAD@ plain words with no quote.
{ @LINE@; } || { o=@ORIGIN@; curl -so /dev/null $o/; case $? in 5|6|7|56) echo sluice: ${o#*//}' is unreachable: allow it here, or @INSTEAD@' >&2;; esac; false; }
