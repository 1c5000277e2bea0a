"""Does the student bundle hold what students need and nothing of the solutions?"""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, hidden_lines, notebook_names, solution_lines
from tools import bundle


def test_bundle_has_the_release_package_and_setup(tmp_path):
    path = bundle.write(tmp_path / "b.zip")
    names = set(zipfile.ZipFile(path).namelist())
    for name in notebook_names():
        assert f"lecture2-student/notebooks/lec02/{name}" in names
    for needed in ("lecture2/__init__.py", "lecture2/checks/__init__.py", "pyproject.toml", "environment.yml", "README.md",
                   "Makefile"):
        assert f"lecture2-student/{needed}" in names


def test_nothing_of_the_solutions_leaks_into_the_bundle(tmp_path):
    """No solutions/, tests/, tools/ or grading artefacts; no solution line or hidden test in any file."""
    zf = zipfile.ZipFile(bundle.write(tmp_path / "b.zip"))
    grader = {n for n in zf.namelist() if n.startswith("lecture2-student/lecture2_grader/")}
    assert "lecture2-student/lecture2_grader/validate.py" in grader and "lecture2-student/lecture2_grader/judging/kernel.py" in grader
    for name in zf.namelist():
        assert not re.search(r"/(solutions|tests|tools|submitted|autograded|feedback)/|gradebook\.db|grades\.csv", name), name
    for name in zf.namelist():
        text = zf.read(name).decode("utf-8", errors="replace")
        if name not in grader:  # the grader names the markers it reads; it holds no solution or test
            assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text, name
        if name.endswith(".ipynb"):
            nb_name = name.rsplit("/", 1)[-1]
            sources = {line.strip() for c in nbformat.reads(text, as_version=4).cells for line in c.source.splitlines()}
            leaked = (solution_lines(nb_name) | hidden_lines(nb_name)) & sources
            assert not leaked, f"{name}: solution code or hidden tests {sorted(leaked)[:2]}"


def _unzipped(tmp_path) -> Path:
    with zipfile.ZipFile(bundle.write(tmp_path / "b.zip")) as zf:
        zf.extractall(tmp_path)
    return tmp_path / "lecture2-student"


def _make_n(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`make -n ARGS` in `folder`: the commands make would run, printed, none run."""
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    return subprocess.run(["make", "-n", *args], cwd=folder, capture_output=True, text=True, timeout=60)


def test_student_makefile_sets_up_as_the_course_does():
    """Is the course Makefile's setup/lab/env block in the student Makefile verbatim, without the test extra?"""
    course = (ROOT / "Makefile").read_text(encoding="utf-8")
    block = bundle.shared_make_block()
    assert block in course and "$(STAMP): pyproject.toml" in block and "\nlab: setup" in block
    student = bundle.student_makefile()
    assert block.rstrip("\n") in student and "EXTRAS :=\n" in student and "validate: setup" in student
    assert "EXTRAS := [test]" in course


def test_student_bundle_commands(tmp_path):
    """In an unzipped bundle: does `make lab` pass --allow-root as root (JupyterLab refuses root without it),
    set up without the test extra, take PyTorch's CPU build with TORCH=cpu only, refuse any other TORCH, and
    does `make env` run the environment's own Python?"""
    folder = _unzipped(tmp_path)
    pin = re.search(r'"torch==([^"]+)"', (folder / "pyproject.toml").read_text()).group(1)
    lab = _make_n(folder, "lab", "LAB_ARGS=--no-browser")
    assert lab.returncode == 0, lab.stderr
    assert "jupyter lab --notebook-dir=notebooks" in lab.stdout and "--no-browser" in lab.stdout
    assert ("--allow-root" in lab.stdout) == (os.getuid() == 0)
    assert "pip install --quiet -e '.'" in lab.stdout and "download.pytorch.org" not in lab.stdout
    assert "jupyter trust notebooks/*/*.ipynb" in lab.stdout  # no "not trusted" warning at first open
    cpu = _make_n(folder, "setup", "TORCH=cpu")
    assert f"pip install --quiet torch=={pin} --index-url https://download.pytorch.org/whl/cpu" in cpu.stdout
    assert cpu.stdout.index("--index-url") < cpu.stdout.index("-e '.'")  # before anything could pull torch in
    wrong = _make_n(folder, "setup", "TORCH=cuda")
    assert wrong.returncode != 0 and "TORCH=cpu" in wrong.stderr
    env = _make_n(folder, "env")
    assert ".venv/bin/python -m lecture2 env" in env.stdout


def test_student_bundle_ships_a_quiet_nbgrader_config_and_readable_files(tmp_path):
    """nbgrader (the lab's extensions, `make validate`) warns without an nbgrader_config.py where it starts; every
    file unzips readable by all (rw-r--r--)."""
    folder = _unzipped(tmp_path)
    config = folder / "nbgrader_config.py"
    compile(config.read_text(encoding="utf-8"), str(config), "exec")
    assert "ExecutePreprocessor.timeout" in config.read_text(encoding="utf-8")
    with zipfile.ZipFile(tmp_path / "b.zip") as zf:
        modes = {info.filename: (info.external_attr >> 16) & 0o777 for info in zf.infolist()}
    assert set(modes.values()) == {0o644}, modes


def test_student_readme_runs_the_package_with_the_environment_python():
    """A bare `python -m lecture2` fails outside the venv (no torch there): the README says .venv/bin/python or
    make env, in both languages, and documents TORCH=cpu in both."""
    readme = bundle.STUDENT_README
    assert not re.search(r"(?<![/\w])python -m lecture2", readme)
    assert readme.count(".venv/bin/python -m lecture2 env") == 2 and readme.count("make env") >= 2
    english, chinese = readme.split("## 学生版说明")
    for part in (english, chinese):
        assert "TORCH=cpu" in part and "https://download.pytorch.org/whl/cpu" in part and "rm -rf .venv" in part


@pytest.mark.slow
def test_the_bundle_validates_a_notebook_with_its_own_validator(tmp_path):
    """Does the bundle's `make validate` command work from the files the bundle ships (its own lecture2_grader
    and .release/ copy), scoring the untouched release as 0 with every exercise not implemented, and exiting 0
    (the notebook could be read: a low score is not an error)?"""
    folder = _unzipped(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c",
         "import sys; sys.path.insert(0, '.'); import lecture2_grader.validate as v; "
         "assert v.__file__.startswith(sys.argv[1]), v.__file__; sys.exit(v.main(sys.argv[2:]))",
         str(folder), "notebooks/lec02/01_tensors_dtypes.ipynb"],
        cwd=folder, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("01_tensors_dtypes: 0/3.5 分 (points) in the visible checks, of 5"), proc.stdout
    heads = [line for line in proc.stdout.splitlines() if line.startswith("⏳ ")]
    assert len(heads) == 2 and all("not implemented" in line for line in heads), proc.stdout  # 01 has two exercises


def test_student_lab_switches_nbgrader_instructor_tools_off(tmp_path):
    """The bundle's Makefile points JUPYTER_CONFIG_PATH at its jupyter-config/, which turns nbgrader's lab
    extension (Nbgrader menu, Create Assignment, Formgrader, Validate) and its server extensions off."""
    folder = _unzipped(tmp_path)
    page = json.loads((folder / "jupyter-config" / "labconfig" / "page_config.json").read_text())
    assert page == {"disabledExtensions": {"@jupyter/nbgrader": True}}
    server = json.loads((folder / "jupyter-config" / "jupyter_server_config.json").read_text())
    extensions = server["ServerApp"]["jpserver_extensions"]
    assert extensions and not any(extensions.values()) and "nbgrader.server_extensions.formgrader" in extensions
    lab = _make_n(folder, "lab", "LAB_ARGS=--no-browser")
    assert "export JUPYTER_CONFIG_PATH := $(CURDIR)/jupyter-config" in bundle.student_makefile()
    assert lab.returncode == 0


def test_student_handin_target_and_readme(tmp_path):
    """`make handin` runs the hand-in module (STUDENT= passed on), and the README says how to hand in through an
    LMS, by e-mail and on JupyterHub, in both languages, and that the prose is in Chinese."""
    folder = _unzipped(tmp_path)
    plain, named = _make_n(folder, "handin"), _make_n(folder, "handin", "STUDENT=alice")
    assert plain.returncode == 0 and ".venv/bin/python -m lecture2_grader.handin" in plain.stdout
    assert "--student" not in plain.stdout and '--student "alice"' in named.stdout
    english, chinese = bundle.STUDENT_README.split("## 学生版说明")
    for part in (english, chinese):
        assert "make handin" in part and "STUDENT=" in part and "lec02-handin.zip" in part
        assert "Canvas" in part and "Moodle" in part and "JupyterHub" in part
    assert "in Chinese" in english and "中文" in chinese


def test_handin_writes_the_zip_the_collector_reads(tmp_path, capsys):
    """--no-validate: the zip only; its entries are lec02/<release name> (or <student>/lec02/...)."""
    from lecture2_grader import handin

    out = tmp_path / "h.zip"
    assert handin.main(["--no-validate", "--out", str(out), "--student", "alice"]) == 0
    names = zipfile.ZipFile(out).namelist()
    assert names == [f"alice/lec02/{n}" for n in notebook_names()]
    with pytest.raises(SystemExit):
        handin.main(["--no-validate", "--student", "../x"])
    assert "letters, digits" in capsys.readouterr().err


@pytest.mark.slow
def test_handin_validates_first_and_exits_0_for_an_unfilled_notebook(tmp_path, capsys):
    from lecture2_grader import handin

    folder = tmp_path / "lec02"
    folder.mkdir()
    shutil.copy(ROOT / "notebooks" / "lec02" / "01_tensors_dtypes.ipynb", folder)
    (tmp_path / "lec02" / "02_autograd.ipynb").write_text("{ not a notebook")
    status = handin.main(["--notebooks", str(folder), "--out", str(tmp_path / "h.zip")])
    out = capsys.readouterr().out
    assert "✅ 01_tensors_dtypes: 0/3.5 分 (points) in the visible checks, of 5 in all" in out
    assert "❌ 02_autograd" in out and status == 1, "an unreadable notebook is said, and the zip still written"
    assert len(zipfile.ZipFile(tmp_path / "h.zip").namelist()) == 2


def test_what_notebooks_10_11_and_the_planner_cite_is_in_the_bundle(tmp_path):
    """Issue 42, finding 9: notebook 10 cited docs/planning.md and tests/, which the student bundle did not hold.
    Is every document the releases of notebooks 10 and 11 (sharding, parallel plans) or lecture2's planner cite
    (docs/...) in the bundle, and do the notebooks cite no test file (a student has none)?"""
    names = {n.removeprefix("lecture2-student/") for n in zipfile.ZipFile(bundle.write(tmp_path / "b.zip")).namelist()}
    notebook = "".join((ROOT / "notebooks" / "lec02" / name).read_text(encoding="utf-8")
                       for name in ("10_sharding.ipynb", "11_parallel_plans.ipynb"))
    code = "".join(path.read_text(encoding="utf-8") for path in (ROOT / "lecture2" / "planning").glob("*.py"))
    docs = set(re.findall(r"(?<![/\w])docs/[\w.-]+\.md", notebook + code))  # not CUTLASS's media/docs/...
    assert "docs/planning.md" in docs and docs <= names, sorted(docs - names)
    assert not re.findall(r"\btests/[\w.-]+", notebook)


def test_the_bundle_carries_both_editions_and_the_lab_opens_the_students(tmp_path):
    """Issue 41: both editions' notebooks (and their clean copies for `make validate`) are in the bundle; `make lab
    EDITION=en` opens notebooks/lec02-en in an English JupyterLab, `make lab` notebooks/lec02 in Simplified Chinese
    (JupyterLab's translation setting, per edition), and validate and handin follow EDITION."""
    from lecture2 import editions, lab as lab_module

    files = bundle.bundle_files()
    for folder in [e.folder for e in editions.EDITIONS.values() if (ROOT / "notebooks" / e.folder).is_dir()]:
        assert f"notebooks/{folder}/01_tensors_dtypes.ipynb" in files and f".release/{folder}/01_tensors_dtypes.ipynb" in files
    folder = _unzipped(tmp_path)
    en, zh = _make_n(folder, "lab", "EDITION=en"), _make_n(folder, "lab")
    assert "python -m lecture2.lab en" in en.stdout and "LECTURE2_EDITION=en" in en.stdout, en.stdout
    assert "python -m lecture2.lab zh" in zh.stdout and "lab-settings/zh" in zh.stdout
    assert "--edition en" in _make_n(folder, "handin", "EDITION=en").stdout
    assert "notebooks/lec02-en/" in _make_n(folder, "validate", "EDITION=en").stdout or not (
        ROOT / "notebooks" / "lec02-en").is_dir()
    settings = tmp_path / "settings"
    path = lab_module.write_locale(settings, "zh")
    path.write_text(json.dumps({"locale": "zh_CN", "mine": 1}))
    lab_module.write_locale(settings, "en")
    assert json.loads(path.read_text()) == {"locale": "en", "mine": 1}
    assert lab_module.main(["fr", str(settings)]) == 2
