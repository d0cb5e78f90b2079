# Two entry points on a fresh machine: `make demo` and `make test`. Both create the environments
# they need if missing (README, "Two environments"):
#   .venv     the Beam environment: every command, the engines (Flink, Spark), the tests' tools
#   .venv-hf  the environment of current releases: the newest Beam (DirectRunner) and the trainer
#             beside datasets 5, transformers 5, lm-eval-harness, numpy 2.3+, pyarrow 24+,
#             datatrove and NeMo Curator (the tests marked `hf` or `newest_beam` run there too)
#   .venv-interop  the trainers' readers whose pins fit neither: megatron-core, MosaicML
#             streaming, litdata (the tests marked `interop` run there)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HF_VENV := .venv-hf
HF_BIN := $(HF_VENV)/bin
HF_STAMP := $(HF_VENV)/.installed
INTEROP_VENV := .venv-interop
INTEROP_BIN := $(INTEROP_VENV)/bin
INTEROP_STAMP := $(INTEROP_VENV)/.installed
TORCH_VERSION := 2.13.0
# setuptools warns on every editable install that a folder named like the package may shadow it:
# c4forge/ is that package, by design (7 lines of noise, every install).
QUIET_SETUPTOOLS := PYTHONWARNINGS="ignore:Editable installation"

.PHONY: demo test test-slow test-all test-interop lint venv venv-hf venv-interop clean-venv bench fuzz browser docs peers

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: an unpinned torch pulls several GB of CUDA packages.
	$(BIN)/pip install -q "torch==$(TORCH_VERSION)"
	$(QUIET_SETUPTOOLS) $(BIN)/pip install -q -e ".[dev]"
	$(BIN)/python -m c4forge.cli.langid --self-check
	touch $(STAMP)

$(HF_STAMP): pyproject.toml Makefile
	test -x $(HF_BIN)/python || $(PY) -m venv $(HF_VENV)
	$(HF_BIN)/pip install -q --upgrade pip
	$(HF_BIN)/pip install -q "torch==$(TORCH_VERSION)"
	$(QUIET_SETUPTOOLS) $(HF_BIN)/pip install -q -e ".[test-hf]"
	touch $(HF_STAMP)

# The trainers' own readers (megatron-core, MosaicML streaming, litdata): streaming pins numpy < 2.2
# and transformers < 5, against Beam 2.62's numpy and .venv-hf's transformers 5 (pyproject's
# [interop] says how); the tests marked interop read our token exports with them, here.
$(INTEROP_STAMP): pyproject.toml Makefile
	test -x $(INTEROP_BIN)/python || $(PY) -m venv $(INTEROP_VENV)
	$(INTEROP_BIN)/pip install -q --upgrade pip
	$(INTEROP_BIN)/pip install -q "torch==$(TORCH_VERSION)"
	$(QUIET_SETUPTOOLS) $(INTEROP_BIN)/pip install -q -e ".[interop]"
	touch $(INTEROP_STAMP)

venv: $(STAMP)

venv-hf: $(HF_STAMP)

venv-interop: $(INTEROP_STAMP)

# Two test processes per machine of two cores or more (pytest-xdist), work-stealing: the suite is
# CPU-bound and most tests use one core. `make test` leaves out the tests marked slow (models
# trained until they learn, the README tour, whole-crawl projections: pyproject.toml says which)
# to stay under 15 minutes on 2 cores; `make test-slow` runs those; CI (.ci/run) runs both.
PYTEST := $(BIN)/python -m pytest -q -n auto --dist worksteal --durations=15
HF_PYTEST := C4FORGE_TEST_ENV=current $(HF_BIN)/python -m pytest -q -n auto --dist worksteal
INTEROP_PYTEST := C4FORGE_TEST_ENV=interop $(INTEROP_BIN)/python -m pytest -q -n auto --dist worksteal
test: $(STAMP) $(HF_STAMP) $(INTEROP_STAMP) browser
	$(PYTEST) -m "not slow" tests
	$(HF_PYTEST) -m "(hf or newest_beam) and not slow" tests
	$(INTEROP_PYTEST) -m "interop and not slow" tests

# The trainers' readers alone (tokenizer export's formats), in .venv-interop.
test-interop: $(INTEROP_STAMP)
	$(INTEROP_PYTEST) -m "interop and not slow" tests

# Debian's chromium for the test that looks at `corpus inspect`'s report as a person would
# (tests/test_inspect_browser.py; it skips, saying why, where this cannot install it).
browser:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
		|| echo "chromium not installed: tests/test_inspect_browser.py will skip"; }

# Tests marked `alone` check CPU seconds measured on this machine (corpus estimate's projection);
# a second test process beside them (one of two cores, or a hyperthread of the same core) inflates
# them by a varying amount, so they run after the others, one process, nothing beside them.
test-slow: $(STAMP) peers
	$(PYTEST) -m "slow and not alone" tests
	$(BIN)/python -m pytest -q -p no:xdist -m "slow and alone" tests

test-all: $(STAMP)
	$(PYTEST) -m "not alone" tests
	$(BIN)/python -m pytest -q -p no:xdist -m alone tests

# Lint (ruff: the rule set and why, in pyproject.toml), types (mypy on the shared floor and the
# stages' public APIs), the generated CLI reference (docs/cli.md) up to date, and the
# Dockerfiles (hadolint; ignored rules and why in .hadolint.yaml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m c4forge.cli.reference --check
	$(BIN)/python -m scripts.render_docs --check
	$(BIN)/hadolint docker/train/Dockerfile docker/dataflow/Dockerfile

# The docs rendered from the code (docs/corpus.md's chain table; the CLI reference has its own
# command, python -m c4forge.cli.reference).
docs: $(STAMP)
	$(BIN)/python -m scripts.render_docs
	$(BIN)/python -m c4forge.cli.reference

# The main job on the embedded sample crawl, offline: `corpus build` (Beam's local runner) with the
# C4 rules and with T5's unfiltered preset, then what every rule removed.
SAMPLE := corpus/data/sample.warc.wet.gz
demo: $(STAMP)
	$(BIN)/corpus build -i $(SAMPLE) --preset c4 --badwords corpus/data/demo-badwords \
		-o demo-out/c4 --overwrite
	$(BIN)/corpus build -i $(SAMPLE) --preset c4-noclean -o demo-out/c4-noclean --overwrite
	$(BIN)/corpus stats demo-out/c4
	$(BIN)/corpus show demo-out/c4 -n 2
	$(BIN)/corpus inspect demo-out/c4 demo-out/c4-noclean -o demo-out/inspect.html --overwrite
	$(BIN)/tokenizer train -i demo-out/c4 --vocab-size 1000 -o demo-out/tokenizer --overwrite
	$(BIN)/tokenizer encode -i demo-out/c4 --tokenizer demo-out/tokenizer -o demo-out/c4-tokens --overwrite
	$(BIN)/tokenizer encode -i demo-out/c4-noclean --tokenizer demo-out/tokenizer \
		-o demo-out/c4-noclean-tokens --overwrite
	$(BIN)/tokenizer inspect demo-out/tokenizer
	$(BIN)/train run --config configs/demo.yaml --overwrite --set progress=false
	$(BIN)/train eval -i demo-out/run --data demo-out/c4-noclean-tokens --split train \
		-o demo-out/run/eval.json
	$(BIN)/train ablate --config configs/ablation-demo.yaml
	$(BIN)/train ablate --config configs/ablation-span-demo.yaml
	@echo "demo output in demo-out/: corpora and what C4's rules did to them (inspect.html: open it"
	@echo "in a browser), tokenizer, token shards, a model (run/) and the"
	@echo "filtered-vs-unfiltered ablation reports: demo-out/ablation/report/report.md (causal LM)"
	@echo "and demo-out/ablation-span/report/report.md (T5's span corruption)"

# `make bench` regenerates the generated sections of benchmarks/RESULTS.md (benchmarks/run_all.py:
# interleaved repeats, min/median/max, stamped with command, date, commit and machine). Our rows run
# in .venv-bench; datatrove needs a newer dill than apache-beam 2.62 allows, so it runs in
# .venv-peers beside c4forge's base install (no [beam] extra; benchmarks/peers.py). Both venvs get the same fastText
# build (fasttext-numpy2-wheel, which datatrove needs), so every row shares it.
BENCH := .venv-bench
PEERS := .venv-peers
CURATOR := .venv-curator
CURATOR_VERSION := 1.4.0
DOLMA := .venv-dolma
DOLMA_VERSION := 1.2.1
bench:
	test -x $(BENCH)/bin/python || $(PY) -m venv $(BENCH)
	$(BENCH)/bin/pip install -q --upgrade pip
	$(BENCH)/bin/pip install -q -e ".[bench]"
	$(BENCH)/bin/pip install -q fasttext-numpy2-wheel
	$(BENCH)/bin/python -m c4forge.cli.langid --self-check
	$(MAKE) peers
	$(PEERS)/bin/python -m c4forge.cli.langid --self-check
	$(BENCH)/bin/python benchmarks/run_all.py

# The peers' venvs (datatrove and its reader beside c4forge without Beam; NeMo Curator; dolma):
# what `make bench` makes first; tests/test_quality.py's exactness test runs datatrove in the first.
peers:
	test -x $(PEERS)/bin/python || $(PY) -m venv $(PEERS)
	$(PEERS)/bin/pip install -q --upgrade pip
	$(PEERS)/bin/python benchmarks/peers.py > $(PEERS)/requirements.txt
	$(PEERS)/bin/pip install -q -r $(PEERS)/requirements.txt
	$(PEERS)/bin/pip install -q --no-deps -e .
	$(PEERS)/bin/pip install -q fasttext-numpy2-wheel
	# NeMo Curator (Ray, pandas 3, its numpy) and dolma (numpy < 2, old tokenizers): a venv each,
	# nothing of ours inside (benchmarks/peer_tools/ holds the scripts they run). Curator's
	# text extra pins a fasttext that does not build here; its FastTextLangId gets the build
	# every other row uses. torch first and pinned, as in .venv (Curator pulls torch).
	test -x $(CURATOR)/bin/python || $(PY) -m venv $(CURATOR)
	$(CURATOR)/bin/pip install -q --upgrade pip
	$(CURATOR)/bin/pip install -q "torch==$(TORCH_VERSION)" "nemo-curator==$(CURATOR_VERSION)" fasttext-numpy2-wheel
	test -x $(DOLMA)/bin/python || $(PY) -m venv $(DOLMA)
	$(DOLMA)/bin/pip install -q --upgrade pip
	$(DOLMA)/bin/pip install -q "dolma==$(DOLMA_VERSION)"

clean-venv:
	rm -rf $(VENV) $(HF_VENV) $(INTEROP_VENV)

# `make fuzz`: every harness of tests/fuzz/harnesses.py under atheris (coverage-guided), from its
# seeds, until FUZZ_RUNS executions or FUZZ_SECONDS each, whichever comes first (defaults: a few
# minutes each; the acceptance runs in docs/reliability.md used FUZZ_RUNS=1000000
# FUZZ_SECONDS=3600). A finding stops the run and leaves its input in .cache/fuzz/HARNESS-crash-*.
FUZZ_SECONDS ?= 180
FUZZ_RUNS ?= 1000000
FUZZ_HARNESSES := records resync response manifests settings words
fuzz: $(STAMP)
	$(BIN)/pip install -q "atheris==2.3.0"
	mkdir -p .cache/fuzz
	for h in $(FUZZ_HARNESSES); do \
		$(BIN)/python tests/fuzz/run.py $$h -runs=$(FUZZ_RUNS) -max_total_time=$(FUZZ_SECONDS) \
			-rss_limit_mb=4096 -timeout=10 -print_final_stats=1 -artifact_prefix=.cache/fuzz/$$h- \
			.cache/fuzz/$$h || exit 1; \
	done

