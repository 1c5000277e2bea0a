# One entry point for students, instructors and CI. Every target sets up .venv first if needed.
#   make lab        set up, then open JupyterLab on notebooks/
#   make test       set up, then run the whole test suite (what CI runs)
#   make release    regenerate notebooks/ (the student release) from solutions/
#   make grade      grade every submission under submitted/ in bubblewrap sandboxes, write feedback/ and grades.csv
#   make validate   check a notebook as the grader will (NOTEBOOK=notebooks/lec02/NAME.ipynb; default: all)
#   make collect    unpack an LMS download (ZIP=submissions.zip, Canvas or Moodle) into submitted/
#   make bundle     the student bundle: dist/lecture2-student.zip
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# nbgrader starts `alembic` as a subprocess: the venv's bin/ must be on PATH.
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup lab test test-fast release grade validate collect bundle clean-grading

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit("Python >= 3.10 is needed, found " + sys.version.split()[0]) if sys.version_info < (3, 10) else None'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (lecture2)" >/dev/null
	touch $(STAMP)

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: setup
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

release: setup
	$(BIN)/nbgrader generate_assignment lec02 --force

grade: setup
	$(BIN)/python -m tools.grade $(GRADE_ARGS)

collect: setup
	@test -n "$(ZIP)" || { echo "usage: make collect ZIP=submissions.zip"; exit 2; }
	$(BIN)/python -m tools.grade.collect $(ZIP)

NOTEBOOK ?= $(wildcard notebooks/lec02/*.ipynb)
validate: setup
	$(BIN)/python -m tools.grade.validate $(NOTEBOOK)

bundle: setup
	$(BIN)/python -m tools.bundle

clean-grading:
	rm -rf submitted autograded feedback downloaded class_report gradebook.db grades.csv mistakes.csv dist
