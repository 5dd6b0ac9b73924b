#!/usr/bin/env bash
# make multinode-demo: InferenceX multi-node keys launched by `harness sweep` on a real
# three-node Slurm cluster of network namespaces on this machine (slurm_cluster.sh), through the
# same launch path as on a GPU cluster, with NVIDIA Dynamo's mocker in place of the GPU workers
# (engine.slurm.worker_stand_in=dynamo-mocker; docs/multinode.md says what that proves and what
# it does not). The harness and its client run on the head node n1. The cluster is torn down on
# any exit. Needs root, slurm-wlm, munge, nginx-light and .venv-dynamo (make dynamo-env).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
cluster=harness/testing/slurm_cluster.sh

FIXED_KEY=${FIXED_KEY:-multinode/dsr1-fp4-b200-dynamo-sglang}
FIXED_ROW=${FIXED_ROW:-recipes/b200-fp4/8k1k.yaml:override_stp_tp4}
AGENTIC_KEY=${AGENTIC_KEY:-multinode/qwen3.5-fp4-gb300-dynamo-sglang-agentic-disagg}
AGENTIC_ROW=${AGENTIC_ROW:-recipes/sglang/qwen3.5/gb300-fp4/agentic/disagg-gb300-1p1d-tp4-tp4-c8-mtp-hicache-session-jid2530030.yaml}
RUN_ID=${RUN_ID:-multinode-demo-$(date +%Y%m%d-%H%M%S)}

command -v nginx >/dev/null || { echo "multinode-demo: nginx is not installed (srt-slurm's router): apt-get install nginx-light" >&2; exit 2; }
bash "$cluster" up 3
trap 'bash "$cluster" down' EXIT
eval "$(bash "$cluster" env)"
export SLURM_CONF

# The stand-in and what a small point on two cores needs: Dynamo's mocker for the workers, its
# tokenizer for the client (the frontend tokenizes with it), no container, a short point. The
# demo proves the launch path, not performance: the client shares this machine's two cores with
# three nodes' worth of mocker, frontend and router processes, so it is judged with the launch
# check's bounds (those of `harness catalog verify-e2e`: stamp error 20 ms, queue delay 100 ms)
# and a disturbed host is marked, not failed (validity.host=warn, validity.steal=warn); every point still says what
# its self-check saw.
stand_in=(engine=multinode engine.slurm.worker_stand_in=dynamo-mocker
          engine.slurm.container_runtime=none engine.slurm.max_nodes=3
          "model.tokenizer=$repo/.venv-dynamo/model/smollm2" scenario.prompts=filtered
          engine.startup_timeout_s=300 client.max_stamp_err_ms=20 client.max_queue_delay_ms=100
          validity.host=warn validity.steal=warn "run_id=$RUN_ID")
head=(ip netns exec "$HEAD_NS" env "SLURM_CONF=$SLURM_CONF" "$repo/.venv/bin/harness")

start=$(date +%s)
echo "== $FIXED_KEY ($FIXED_ROW): fixed-sequence, disaggregated prefill/decode"
"${head[@]}" sweep "recipe=$FIXED_KEY" "engine.deployment=$FIXED_ROW" "${stand_in[@]}" \
  'row_concurrency=[4,8]' scenario.isl=1024 scenario.osl=128

# Every captured agentic disaggregated row is an MTP one; the mocker does not draft (its MTP
# model needs aisimulate), so the point says speculator none rather than claim MTP.
echo "== $AGENTIC_KEY: agentic replay with Dynamo's session headers, as AIPerf sends them"
"${head[@]}" sweep "recipe=$AGENTIC_KEY" ${AGENTIC_ROW:+"engine.deployment=$AGENTIC_ROW"} \
  "${stand_in[@]}" speculator=none \
  'scenario.correlation_headers=[X-Dynamo-Session-ID]' \
  scenario.dataset.id=null 'scenario.trace_files=[scenarios/traces/weka-cc-traces/trace_0026.json]' \
  scenario.fit_mode=scale scenario.fit_factor=16 scenario.duration_s=60 scenario.min_measured_s=30

echo "== what the run holds, against Slurm's own record ($(( $(date +%s) - start )) s)"
"$repo/.venv/bin/python" -m harness.testing.multinode_check "results/$RUN_ID" \
  "$(dirname "$SLURM_CONF")/jobcomp.txt"
