# shellcheck shell=sh
# The same, for a line that may have been reaching either of two origins
# (the link's, and the store's its script PUTs to): @ORIGINS@ shell words.
# shellcheck disable=SC2043 # @ORIGINS@ is two words once filled in
{ @LINE@; } || { for o in @ORIGINS@; do curl -so /dev/null $o/; case $? in 5|6|7|56) echo sluice: ${o#*//}' is unreachable: allow it here, or @INSTEAD@' >&2;; esac; done; false; }
