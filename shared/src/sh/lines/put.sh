# shellcheck shell=sh
# A PUT of a file (`curl::upload_command`): @HEADERS@ is ` -H 'Name: value'`
# for each header (each with its space before it: none, nothing), @FILE@ and
# @URL@ quoted words.
curl --fail-with-body -sS -X PUT@HEADERS@ --upload-file @FILE@ @URL@
