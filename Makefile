# Two commands on a fresh machine: `make demo` and `make test`.
VENV     ?= .venv
PY       := $(VENV)/bin/python
STRATEGY ?= multi_worker
WORKERS  ?= 2
STEPS    ?= 300
PYTEST_ARGS ?=

.PHONY: setup demo test clean

setup:
	bash scripts/setup_env.sh

demo: setup
	$(PY) -m estimator_dist.launch --strategy=$(STRATEGY) --num_workers=$(WORKERS) \
	    -- $(PY) -m model_zoo.mnist_cnn --train_steps=$(STEPS)

test: setup
	$(PY) -m pytest tests $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
