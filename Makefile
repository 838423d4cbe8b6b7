# Two commands on a fresh machine: `make demo` and `make test`; `make bench` compares strategies.
VENV     ?= .venv
PY       := $(VENV)/bin/python
STRATEGY ?= multi_worker
WORKERS  ?= 2
STEPS    ?= 300
PYTEST_ARGS ?=

BENCH_ARGS ?=

.PHONY: setup demo test bench clean

setup:
	bash scripts/setup_env.sh

demo: setup
	$(PY) -m estimator_dist.launch --strategy=$(STRATEGY) --num_workers=$(WORKERS) \
	    -- $(PY) -m model_zoo.mnist_cnn --train_steps=$(STEPS)

test: setup
	$(PY) -m pytest tests $(PYTEST_ARGS)

bench: setup
	$(PY) benchmarks/compare_strategies.py --strategies=horovod,multi_worker,parameter_server,mirrored \
	    --num_workers=1,2 --model=mnist_cnn --steps=200 --project $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
