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
  # Slurm as a launcher sees it: salloc grants job 4242, squeue lists it until scancel
  salloc) echo "salloc: Granted job allocation 4242" >&2; : > "$CAPTURE_RECORD_DIR/SLURM_ALLOC" ;;
  scancel) rm -f "$CAPTURE_RECORD_DIR/SLURM_ALLOC" ;;
  # an idle 8-GPU node (benchmark_lib.sh wait_for_amd_gpu_clean greps this under pipefail)
  rocm-smi) case " $* " in *" --showmemuse "*)
              for g in 0 1 2 3 4 5 6 7; do
                printf 'GPU[%s]\t\t: GPU Memory Allocated (VRAM%%): 0\n' "$g"
              done ;;
              *" --showfw "*)
              # firmware at 177, the version the scripts' MEC workaround tests against
              for g in 0 1 2 3 4 5 6 7; do
                printf 'GPU[%s]\t\t: MEC firmware version: \t\t177\n' "$g"
              done ;;
            esac ;;
  squeue) if [ -e "$CAPTURE_RECORD_DIR/SLURM_ALLOC" ]; then echo 4242; fi ;;
  curl) port=
        for a in "$@"; do
          if [ "$prev" = "-o" ] && [ "$a" != /dev/null ]; then : > "$a"; fi; prev=$a
          case "$a" in
            *://localhost*|*://0.0.0.0*|*://127.0.0.1*)
              hp=${a#*://}; hp=${hp%%/*}
              case "$hp" in *:*) port=${hp##*:} ;; *) port=noport ;; esac ;;
          esac
        done
        # a probe of a local server answers once a server stand-in on that port has recorded
        # itself (recorder.py writes UP-<port>), so nothing runs before the server's record
        if [ -n "$port" ]; then
          i=0
          while [ ! -e "$CAPTURE_RECORD_DIR/UP-$port" ] && [ ! -e "$CAPTURE_RECORD_DIR/UP-noport" ]; do
            i=$((i + 1)); [ "$i" -gt 100 ] && exit 7
            /bin/sleep 0.05
          done
        fi ;;
  hf|huggingface-cli)
        # `hf download REPO` without --local-dir: a complete snapshot in the hub cache
        # (models--org--name/refs/main + snapshots/<rev>/), its path on stdout, as hf prints it
        repo=; local_dir=; dataset=
        for a in "$@"; do
          case "$prev" in --local-dir) local_dir=$a ;; --repo-type) [ "$a" = dataset ] && dataset=1 ;; esac
          case "$a" in -*|download) ;; *) [ -z "$repo" ] && [ "$prev" != --repo-type ] && [ "$prev" != --local-dir ] && [ "$prev" != --revision ] && repo=$a ;; esac
          prev=$a
        done
        prev=
        if [ -n "$repo" ] && [ -z "$local_dir" ] && [ -z "$dataset" ]; then
          root=${HF_HUB_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}/hub}
          m="$root/models--$(printf '%s' "$repo" | /bin/sed 's#/#--#g')"
          mkdir -p "$m/refs" "$m/snapshots/0000000000" 2>/dev/null && echo 0000000000 > "$m/refs/main"
          set -- --local-dir "$m/snapshots/0000000000"
          echo "$m/snapshots/0000000000"
        fi
        for a in "$@"; do
          if [ "$prev" = "--local-dir" ]; then
            # a complete checkpoint as the scripts' checkpoint_is_complete checks: config,
            # tokenizer, a shard index and the shard it names
            mkdir -p "$a" && echo '{}' > "$a/config.json" && echo '{}' > "$a/tokenizer_config.json"
            echo '{}' > "$a/tokenizer.json"
            echo '{"weight_map": {"w": "model-00001-of-00001.safetensors"}}' \
              > "$a/model.safetensors.index.json"
            : > "$a/model-00001-of-00001.safetensors"
          fi; prev=$a
        done ;;
esac
exit 0
