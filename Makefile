# Two commands on a fresh machine: `make demo` and `make test`; `make bench` compares strategies.
VENV     ?= .venv
PY       := $(VENV)/bin/python
STRATEGY ?= multi_worker
WORKERS  ?= 2
STEPS    ?= 300
PYTEST_ARGS ?=
# The suite runs in this many processes (pytest-xdist): its tests mostly wait on the
# processes they start, so two share this machine's cores; files that share one cluster
# or pair of hosts keep to one process (xdist_group).
TEST_PROCESSES ?= 2

BENCH_ARGS ?=

.PHONY: setup demo test test-fast docs bazel-test bench clean

setup:
	bash scripts/setup_env.sh

demo: setup
	$(PY) -m estimator_dist.launch --strategy=$(STRATEGY) --num_workers=$(WORKERS) \
	    -- $(PY) -m model_zoo.mnist_cnn --train_steps=$(STEPS)

# Every test through pytest, the documentation site, then the Bazel build and its unit
# test targets.
test: setup
	$(PY) -m pytest tests -n $(TEST_PROCESSES) --dist loadgroup $(PYTEST_ARGS)
	$(MAKE) docs
	$(MAKE) bazel-test

# The documentation site, into site/: a broken link, a missing page or a page left out of
# mkdocs.yml's nav fails it (strict); then pages of it load in Chromium without an error.
docs:
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site
	@if command -v chromium >/dev/null 2>&1; then $(PY) scripts/check_site.py site; \
	else echo "chromium is not installed (make setup installs it as root): the site is not loaded in a browser"; fi

# The tests that start no process: under a minute.
test-fast: setup
	$(PY) -m pytest tests -m "not processes" $(PYTEST_ARGS)

bazel-test:
	@if command -v bazel >/dev/null 2>&1; then \
	  status=0; bazel test //... || status=$$?; bazel shutdown; exit $$status; \
	else echo "bazel is not installed (make setup installs it as root): skipping bazel test"; fi

bench: setup
	$(PY) benchmarks/compare_strategies.py --strategies=horovod,multi_worker,parameter_server,mirrored \
	    --num_workers=1,2 --model=mnist_cnn --project $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build site *.egg-info
	-command -v bazel >/dev/null 2>&1 && bazel clean --expunge
