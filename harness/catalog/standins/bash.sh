#!/bin/bash
# bash: the real one, except for `bash SCRIPT` where SCRIPT is a patch script of the checkout
# (its file name says "patch", e.g. benchmarks/single_node/agentic/apply_k3_container_patches.sh
# @843c6254, which kimik3_fp4_mi355x_mtp.sh runs before its server). Such a script edits the
# engine installed in the image (it resolves vllm's and aiter's dist-packages and git-applies
# embedded diffs there), which is not here: the call is recorded as one patch step, with the
# script's absolute path, and not run, as `patch` and `git apply` are (recorder.py).
# A bash script, not sh: dash drops the exported BASH_FUNC_command_not_found_handle%% (not a
# valid sh name), and the scripts this execs would then lose the unknown-command recorder.
case "$1" in
  -*|"") exec /bin/bash "$@" ;;
esac
case "${1##*/}" in
  *patch*)
    if [ -f "$1" ]; then
      s=$(/usr/bin/realpath "$1")
      shift
      exec "${0%/*}/_fast" bash "$s" "$@"
    fi ;;
esac
exec /bin/bash "$@"
