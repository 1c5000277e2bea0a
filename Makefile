# One entry point for students, instructors and CI. Every target sets up .venv first if needed.
#   make lab        set up, then open JupyterLab on notebooks/lec02 (the Chinese edition, the lab in Chinese);
#                   EDITION=en: notebooks/lec02-en, the English edition, the lab in English (also for validate, handin)
#   make env        set up, then print what this machine has (device, dtypes, the peak FLOP/s that applies)
#   make test       set up, then run the whole test suite (what CI runs): unit tests + nbval of solutions/
#   make test-fast  set up, then run the unit tests only (no notebooks, no nbgrader): under a minute
#   make release    regenerate notebooks/ (the student release, both editions: lec02, lec02-en) from solutions/
#   make grade      grade every submission under submitted/ in bubblewrap sandboxes, write feedback/ and grades.csv
#   make validate   check a notebook as the grader will (NOTEBOOK=notebooks/lec02/NAME.ipynb; default: all)
#   make collect    merge an LMS download into submitted/, notebook by notebook (ZIP="submissions.zip late.zip";
#                   Canvas, Moodle, hand-in zips, nbgrader's exchange inbound folder); earlier copies kept in history
#   make export     the grades for Canvas's and Moodle's import: export/canvas.csv, export/moodle.csv
#   make handin     as a student would: validate every notebook, then write lec02-handin.zip (STUDENT=id optional)
#   make bundle     the student bundle: dist/lecture2-student.zip
#   make book       the course as a website, both editions, read offline: build/book/index.html (docs/book.md)
#   make hub        (as root) the course's JupyterHub on 127.0.0.1:$(HUB_PORT) for the class on HUB_ROSTER; make
#                   hub-stop, make hub-status (docs/hub.md)
#   make feedback   release the feedback pages through the hub's exchange: students' "Fetch Feedback" gets them
# Setup options (the first time, before .venv exists):
#   make setup TORCH=cpu      PyTorch's CPU-only build from PyTorch's own wheel index (a computer without an
#                             NVIDIA GPU: about 1.5 GB instead of 5 GB where pip would take the CUDA build)
#   make setup PYTHON=python3.12    the interpreter that creates .venv
EXTRAS := [test]

# >>> setup, lab, env: tools/bundle.py copies this block verbatim into the student bundle's Makefile
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# nbgrader starts `alembic` as a subprocess: the venv's bin/ must be on PATH.
export PATH := $(CURDIR)/$(BIN):$(PATH)
# TORCH=cpu installs PyTorch's CPU build of the pinned release from TORCH_INDEX before everything else; the
# choice is kept in $(VENV)/.torch, so that a later reinstall (pyproject.toml changed) keeps it. Left out,
# pip takes its default build: on Linux x86-64 PyPI's torch is the CUDA one, GPU or not.
TORCH_KEPT := $(shell cat $(VENV)/.torch 2>/dev/null)
TORCH ?= $(TORCH_KEPT)
TORCH_INDEX ?= https://download.pytorch.org/whl/$(TORCH)
TORCH_VERSION := $(shell sed -n 's/^ *"torch==\([^"]*\)".*/\1/p' pyproject.toml)
ifneq ($(filter-out cpu,$(TORCH)),)
$(error TORCH=$(TORCH) is not an option: write TORCH=cpu for the CPU-only build, or leave it out)
endif
ifeq ($(TORCH)$(TORCH_KEPT),cpu)
ifneq ($(wildcard $(STAMP)),)
ifneq ($(shell $(BIN)/python -c 'import torch; print(torch.version.cuda is None)' 2>/dev/null),True)
$(error TORCH=cpu: $(VENV) already holds a CUDA build of PyTorch. Remove it (rm -rf $(VENV)), then run the same make command again)
endif
endif
endif

.PHONY: setup lab env

setup: $(STAMP)

# After the install, rfc3987-syntax goes: jsonschema (which jupyter-events asks for with its format-nongpl extra)
# imports it when it is there, and it builds an Earley parser as it loads, 1.3 s in every process that imports
# nbformat, nbgrader or Jupyter's server (the grader, each nbgrader command, each lab). Nothing here checks an IRI's
# syntax; without it jsonschema leaves that one format unchecked.
# The last step signs the release notebooks as trusted (in Jupyter's own signature store, in the user's Jupyter
# data folder): the lab would otherwise log "Notebook ... is not trusted" the first time each one is opened.
$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit("Python >= 3.10 is needed, found " + sys.version.split()[0]) if sys.version_info < (3, 10) else None'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
ifeq ($(TORCH),cpu)
	$(BIN)/python -m pip install --quiet torch==$(TORCH_VERSION) --index-url $(TORCH_INDEX)
	echo cpu > $(VENV)/.torch
endif
	$(BIN)/python -m pip install --quiet -e '.$(EXTRAS)'
	$(BIN)/python -m pip uninstall --quiet --yes rfc3987-syntax
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ipykernel)" >/dev/null
	$(BIN)/jupyter trust notebooks/*/*.ipynb >/dev/null 2>&1 || true
	touch $(STAMP)

# The lab talks to its kernels over local TCP. Where pyzmq has CurveZMQ (its wheels do) and Jupyter knows the
# option, the lab encrypts that traffic, and ipykernel no longer warns at every kernel start that it is plain text.
LAB_ENCRYPTION = $(shell $(BIN)/python -c 'import zmq; from jupyter_server.services.kernels.kernelmanager import MappingKernelManager as M; print("--MappingKernelManager.transport_encryption=auto" if zmq.has("curve") and M.class_traits().get("transport_encryption") else "")' 2>/dev/null)

# The edition: EDITION=en opens the English one (notebooks/lec02-en) in JupyterLab's English; the default, the
# Chinese one (notebooks/lec02) in its Simplified Chinese (jupyterlab-language-pack-zh-CN: menus, the Assignments
# tab). `python -m lecture2.lab` sets the lab's language (its translation setting, kept per edition under
# $(VENV)/lab-settings/) and names the folder; the kernels know the edition (LECTURE2_EDITION) for what lecture2 says.
EDITION ?= zh
LAB_SETTINGS = $(CURDIR)/$(VENV)/lab-settings/$(EDITION)

lab: setup
	folder=$$($(BIN)/python -m lecture2.lab $(EDITION) $(LAB_SETTINGS)) && \
	JUPYTERLAB_SETTINGS_DIR=$(LAB_SETTINGS) LECTURE2_EDITION=$(EDITION) \
	$(BIN)/jupyter lab --notebook-dir=notebooks/$$folder $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ENCRYPTION) $(LAB_ARGS)

env: setup
	$(BIN)/python -m lecture2 env
# <<< end of the block shared with the student bundle

.PHONY: test test-fast release grade validate collect export handin bundle book clean-grading

# The whole suite: tests/ and, with --nbval, every notebook of solutions/ run and compared cell by cell. The 15
# longest steps are listed at the end (where the suite's time goes, for whoever shortens it next).
# Two pytest processes side by side (tests/lanes.py): the tests that mostly wait run beside the rest.
test: setup
	$(BIN)/python tests/lanes.py --nbval --durations=15 $(PYTEST_ARGS)

# The unit tests of tests/ without the `slow` ones (nbgrader round trips, notebook runs, the browser test).
test-fast: setup
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

release: setup
	$(BIN)/python -m tools.release

grade: setup
	$(BIN)/python -m lecture2_grader $(GRADE_ARGS)

collect: setup
	@test -n "$(ZIP)" || { echo "usage: make collect ZIP=submissions.zip   (several: ZIP=\"a.zip late.zip\")"; exit 2; }
	$(BIN)/python -m lecture2_grader.collect $(ZIP)

export: setup
	$(BIN)/python -m lecture2_grader.export

handin: setup
	$(BIN)/python -m lecture2_grader.handin --edition $(EDITION) $(if $(STUDENT),--student "$(STUDENT)")

NOTEBOOK ?= $(wildcard notebooks/$(if $(filter en,$(EDITION)),lec02-en,lec02)/*.ipynb)
validate: setup
	$(BIN)/python -m lecture2_grader.validate $(NOTEBOOK)

bundle: setup
	$(BIN)/python -m tools.bundle

# Both editions as static pages from solutions/ (their stored outputs; solutions and hidden tests stripped), read
# offline: formulas as MathML, no script (docs/book.md).
book: setup
	$(BIN)/python -m tools.book

# Derived outputs are removed; what cannot be made again (submissions, the LMS downloads, the gradebook with its
# manual grades) is moved into .trash/<time>/, never deleted.
clean-grading:
	@t=.trash/$$(date +%Y%m%dT%H%M%S); for d in submitted downloaded gradebook.db; do \
	  if [ -e $$d ]; then mkdir -p $$t && mv $$d $$t/ && echo "moved $$d to $$t/"; fi; done
	rm -rf autograded feedback class_report export grades.csv notebooks.csv mistakes.csv mistakes_by_student.csv predictions.csv dist

# ---- The course on JupyterHub (lecture2_hub, docs/hub.md). `make hub` runs as root: each student's server runs as
# that student's own Unix user. configurable-http-proxy (npm) goes into .venv/hub-proxy; Node and npm from Debian.
.PHONY: hub hub-stop hub-status hub-proxy feedback
# HUB_ROSTER: the class (docs/hub.md); without one, HUB_DEMO=1 starts the demo class (your own machine only).
# HUB_URL: where people open the hub behind your TLS proxy (https://hub.example.edu; each person's server on
# <name>.hub.example.edu); default http://localhost:$(HUB_PORT). HUB_LIMITS: each student's bounds
# (memory=2GiB,cpus=1,processes=256,disk=2GiB,tmp=512MiB,kernels=3,idle=3600,exchange=8GiB; off: none).
HUB_PORT ?= 8000
HUB_ROSTER ?=
HUB_DEMO ?=
HUB_URL ?=
HUB_LIMITS ?=
HUB_EXCHANGE ?= /srv/nbgrader/exchange
HUB_HOMES ?= /home
HUB_PROXY := $(VENV)/hub-proxy/node_modules/.bin/configurable-http-proxy
# 4.6.3: the last release that runs on Debian 12's Node 18 (5.x wants Node >= 20)
CHP_VERSION := 4.6.3

$(HUB_PROXY):
	@command -v npm >/dev/null || { echo "make hub needs Node and npm: sudo apt-get install nodejs npm"; exit 2; }
	npm install --silent --no-audit --no-fund --prefix $(VENV)/hub-proxy configurable-http-proxy@$(CHP_VERSION)

hub-proxy: setup $(HUB_PROXY)

hub: setup $(HUB_PROXY)
	$(BIN)/python -m lecture2_hub start $(if $(HUB_ROSTER),--roster $(HUB_ROSTER)) $(if $(HUB_DEMO),--demo) \
	    --port $(HUB_PORT) $(if $(HUB_URL),--url $(HUB_URL)) $(if $(HUB_LIMITS),--limits $(HUB_LIMITS)) \
	    --exchange $(HUB_EXCHANGE) --homes $(HUB_HOMES) --proxy $(HUB_PROXY)

hub-stop:
	$(BIN)/python -m lecture2_hub stop

hub-status:
	@$(BIN)/python -m lecture2_hub status || true

feedback: setup
	$(BIN)/python -m lecture2_grader.release_feedback --exchange $(HUB_EXCHANGE)
