# Set-up is part of every target: a fresh machine needs nothing but python3 (3.11+) and make.
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU studies of the main job: real short training runs, then their published reports.
# (params/resnet50_tf/cpu_time_to_train.yaml trains to a target on the digits data: minutes per epoch on
# two cores, so it is run on its own: benchbook run ... && benchbook publish ...)
CPU_STUDIES := params/resnet50_tf/cpu.yaml params/resnet50_mxnet/cpu.yaml params/maskrcnn_tf2/cpu.yaml \
	params/resnet50_pytorch/cpu.yaml params/bert_pytorch/cpu.yaml
# The smallest time-to-train study writes MLLOG (mllog.txt per run): `benchbook mlperf score` scores our own runs.
TTT_SMOKE := params/resnet50_tf/cpu_time_to_train_smoke.yaml
SMOKE_STUDIES := params/resnet50_tf/cpu_smoke.yaml params/resnet50_mxnet/cpu_smoke.yaml params/maskrcnn_tf2/cpu_smoke.yaml \
	params/resnet50_pytorch/cpu_smoke.yaml params/bert_pytorch/cpu_smoke.yaml

# The notebooks' kernel reads its configuration from the environment (notebooks/ipython/: no TCP warning).
# setuptools>=77 (the build backend): tests/test_packaging.py builds the wheel with it, offline.
KERNEL_CONFIG := notebooks/ipython/ipython_kernel_config.py
$(BIN)/.installed: pyproject.toml constraints.txt $(KERNEL_CONFIG)
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --no-compile -c constraints.txt "setuptools>=77" -e '.[test]'
	install -D -m 644 $(KERNEL_CONFIG) $(VENV)/etc/ipython/ipython_kernel_config.py
	touch $@

.PHONY: setup report test test-slow lint bench reference smoke wheels offline-setup lock lab clear-outputs
setup: $(BIN)/.installed

# Explore in JupyterLab (README): the project's environment and its kernel; a notebook's .py opens as a notebook
# (jupytext's viewer: notebooks/jupyterlab-settings.json, installed as this environment's JupyterLab settings),
# paired with its .ipynb. Saving writes outputs into the .ipynb: `make clear-outputs` before a commit. As root (a
# container), jupyter lab refuses to start without --allow-root: given then. LAB_ARGS: more options (--port=8889).
lab: $(BIN)/.installed
	install -D -m 644 notebooks/jupyterlab-settings.json $(VENV)/share/jupyter/lab/settings/overrides.json
	$(BIN)/jupyter lab --ServerApp.root_dir=. $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS) notebooks/resnet50_tf.py

clear-outputs: $(BIN)/.installed
	$(BIN)/jupyter nbconvert --log-level=WARN --clear-output --inplace notebooks/*.ipynb
	$(BIN)/jupytext --quiet --sync notebooks/*.ipynb

# constraints.txt: the set of packages the tests passed with, written from the environment they ran in.
lock: $(BIN)/.installed
	{ sed -n '/^#/p' constraints.txt; $(BIN)/pip freeze --exclude-editable; } > constraints.tmp && mv constraints.tmp constraints.txt

# The main job: first the published results reproduced from the logs the repository ships (params/published/:
# no framework, no training; reports/index.html shows them within a minute or two) while the CPU studies'
# framework environments are built beside them (first use only; `nice`: the reports come first), then the
# CPU studies once no install runs beside them (runs already complete are kept), then their reports join
# the index. A failed run or environment does not stop the job: its report shows the failure and its cause.
PUBLISHED_SETS := $(sort $(wildcard params/published/*.yaml))
report: $(BIN)/.installed
	@echo "benchbook: publishing the published results from their logs; the framework environments are built meanwhile"
	@for s in $(CPU_STUDIES); do nice -n 19 $(BIN)/python -m benchbook.studies.runner $$s & done; \
	$(BIN)/benchbook publish $(PUBLISHED_SETS); published=$$?; \
	echo "published results reproduced from their logs: open reports/index.html (the CPU studies follow)"; \
	wait; exit $$published
	@n=0; for s in $(CPU_STUDIES); do n=$$((n + 1)); echo "benchbook: CPU study $$n/$(words $(CPU_STUDIES)): $$s"; \
	$(BIN)/benchbook run $$s --resume --quiet || echo "benchbook: $$s had failures (see its report)"; done
	$(BIN)/benchbook publish $(CPU_STUDIES)
	@echo "open reports/index.html"

lint: $(BIN)/.installed
	$(BIN)/ruff check lib tests tools bench

# The test tiers (tests/conftest.py's TIERS): `make test` is the fast tier, every test that starts no
# kernel, browser, workload, Slurm job or study process and measures nothing; `make test-slow` the others
# (a framework's tests run where BENCHBOOK_TEST_<FRAMEWORK>_PYTHON names its environment, as .ci/run does).
SLOW_TIERS := notebook or browser or workload or slurm or process or bench or shipped
# Tests run on every core (pytest-xdist). The slow tiers run three test files at a time on the two cores,
# each file's tests in one worker (its module fixtures made once): kernels, Slurm and study processes mostly wait; the shipped
# tier's tools over real inputs go with them. The bench tier, which times and bounds, runs alone after them.
test: lint
	$(BIN)/python -m pytest -n auto -m "not ($(SLOW_TIERS))"

test-slow: $(BIN)/.installed
	$(BIN)/python -m pytest -n 3 --dist loadfile -m "($(SLOW_TIERS)) and not bench" --durations=25
	$(BIN)/python -m pytest -m bench --durations=10

# Where no package index can be reached (a GPU machine whose python3 has PyTorch): `make wheels` here
# writes benchbook's dependencies and build backend to dist/wheels; copy the checkout with it there and
# `make offline-setup` installs from those files alone (then BENCHBOOK_PYTHON_PYTORCH=/usr/bin/python3).
wheels: $(BIN)/.installed
	$(BIN)/pip wheel --quiet -w dist/wheels -c constraints.txt "setuptools>=77" wheel '.[test]'

offline-setup:
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --no-index --find-links dist/wheels "setuptools>=77" wheel
	$(BIN)/pip install --quiet --no-index --find-links dist/wheels --no-build-isolation -e '.[test]'
	install -D -m 644 $(KERNEL_CONFIG) $(VENV)/etc/ipython/ipython_kernel_config.py
	touch $(BIN)/.installed

# CI: the smallest real runs through the launcher, notebooks and reports, on a fresh machine.
smoke: $(BIN)/.installed
	@# the framework environments first, built side by side (their downloads overlap), as make report does
	@for s in $(SMOKE_STUDIES); do $(BIN)/python -m benchbook.studies.runner $$s & done; wait
	for s in $(SMOKE_STUDIES); do $(BIN)/benchbook run $$s --resume --out runs-smoke || exit 1; done
	$(BIN)/benchbook publish $(SMOKE_STUDIES) --runs runs-smoke --reports reports-smoke
	$(BIN)/benchbook run $(TTT_SMOKE) --resume --out runs-smoke
	$(BIN)/benchbook mlperf score runs-smoke/resnet50_tf-$(basename $(notdir $(TTT_SMOKE))) --json > runs-smoke/mlperf-score.json
	$(BIN)/python -c 'import json, sys; r = json.load(open(sys.argv[1])); d = r["run_details"]; \
	  ok = r["runs"] == 1 and r["runs_failed"] == 0 and all(x["minutes"] for x in d); \
	  sys.exit(0 if ok else "our own runs did not score as expected: " + json.dumps(r))' runs-smoke/mlperf-score.json

# Analysis against the published logs the repository ships (examples/published/: one archive per set, read
# in place, its NOTICE and expected.yaml beside it). The default rule must land within 0.2% of every published
# number; of the newer format families, NGC MXNet 22.x with DLLogger lines is read, and NGC PyTorch, whose
# published number (PaddlePaddle/Perf) is the mean from iteration 10 on: its `perf` rule (main.py itself
# averages all). Then the three reproduction reports published from the shipped sets, and the MLPerf scores.
PUBLISHED := examples/published
reference: $(BIN)/.installed
	$(BIN)/python tools/check_reference_logs.py $(PUBLISHED)/ngc-tf1-resnet50
	$(BIN)/python tools/check_reference_logs.py $(PUBLISHED)/ngc-mxnet-resnet50
	$(BIN)/python tools/check_reference_logs.py $(PUBLISHED)/ngc-tf2-maskrcnn
	$(BIN)/python tools/check_reference_logs.py $(PUBLISHED)/ngc-mxnet-resnet50-dllogger
	$(BIN)/python tools/check_reference_logs.py $(PUBLISHED)/ngc-pytorch-resnet50 --rule perf
	$(BIN)/python tools/check_bert_reference.py $(PUBLISHED)/ngc-pytorch-bert
	$(BIN)/python tools/check_bert_reference.py $(PUBLISHED)/ngc-tf1-bert
	$(BIN)/python tools/check_reference_reports.py $(PUBLISHED) --reports reports-reference
	$(BIN)/python tools/check_mlperf_results.py $(PUBLISHED)/mlperf
	$(BIN)/benchbook mlperf run params/mlperf/nvidia_v0.7_resnet_dgxa100.yaml --dry-run
	$(BIN)/benchbook publish $(PUBLISHED_SETS) --reports reports-published

bench: $(BIN)/.installed
	$(BIN)/python bench/bench_analyze.py
