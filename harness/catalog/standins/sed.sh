#!/bin/sh
# sed: the real one, unless it edits in place (-i): then the recorder decides (recorder.py sed).
for a in "$@"; do
  case "$a" in
    -i*|--in-place*) CAPTURE_AS=sed exec "${0%/*}/_recorder" "$@" ;;
  esac
done
exec /bin/sed "$@"
