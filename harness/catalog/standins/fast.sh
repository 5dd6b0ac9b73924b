#!/bin/sh
# The fast recording stand-in (see recorder.py for the ones that need logic): writes the argv
# (NUL-separated), environment (env -0) and cwd of a command whose behaviour is "succeed", as
# <time_ns>-<pid>-sh.{argv,env,cwd} in $CAPTURE_RECORD_DIR. sleep returns at once.
n=${0##*/}
case "$n" in
  sleep) exit 0 ;;
  _unknown) n=$1; shift; u=-unk ;;
esac
f="$CAPTURE_RECORD_DIR/$(date +%s%N)-$$-sh$u"
printf '%s\0' "$n" "$@" > "$f.argv"
env -0 > "$f.env"
pwd > "$f.cwd"
prev=
case "$n" in
  salloc) echo "salloc: Granted job allocation 4242" >&2 ;;
  curl) local_url=
        for a in "$@"; do
          if [ "$prev" = "-o" ] && [ "$a" != /dev/null ]; then : > "$a"; fi; prev=$a
          case "$a" in *localhost*|*0.0.0.0*|*127.0.0.1*) local_url=1 ;; esac
        done
        # a probe of the local server answers once a server stand-in has recorded itself
        # (recorder.py writes SERVER_UP), so the client never starts before the server's record
        if [ -n "$local_url" ]; then
          i=0
          while [ ! -e "$CAPTURE_RECORD_DIR/SERVER_UP" ]; do
            i=$((i + 1)); [ "$i" -gt 100 ] && exit 7
            /bin/sleep 0.05
          done
        fi ;;
  hf|huggingface-cli) for a in "$@"; do
          if [ "$prev" = "--local-dir" ]; then
            mkdir -p "$a" && echo '{}' > "$a/config.json" && : > "$a/model.safetensors"
          fi; prev=$a
        done ;;
esac
exit 0
