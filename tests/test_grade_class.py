"""The class grader (`make grade`, tools/grade/) on a corpus of submissions: honest ones saved in odd ways,
faulty ones, and attacks a determined student tried. Each earns exactly what it honestly earns and draws its
report line; no student changes another's grade, the course, or the gradebook.

The corpus uses notebook 01 (7 points: tensor_bytes 2, float_format_limits 3, weight_memory 2), so that
grading ~45 students stays quick; a second course with notebooks 01 and 02 (7 points each) shows that a
fault costs only its own notebook.
"""
from __future__ import annotations

import csv
import hashlib
import html
import re
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

import submissions as sub
from conftest import ASSIGNMENT, RELEASE, ROOT, SOLUTIONS, hidden_lines
from tools.grade import cli, gradebook, sandbox

pytestmark = pytest.mark.slow
NB1, NB2 = "01_tensors_dtypes.ipynb", "02_autograd.ipynb"
S1, S2 = NB1.removesuffix(".ipynb"), NB2.removesuffix(".ipynb")
REF = sub.reference_answers(NB1)
TB, FF, WM = "ex01_tensor_bytes", "ex01_float_format", "ex01_weight_memory"
BITS = "def tensor_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize * 8\n"


def with_code(before: str = "", after: str = "", gid: str = TB) -> nbformat.NotebookNode:
    """Notebook 01 with the reference answer of `gid` wrapped in extra code."""
    return sub.filled(NB1, **{gid: before + REF[gid] + after})


def inside_tensor_bytes(body: str, result: str = "math.prod(shape) * dtype.itemsize") -> nbformat.NotebookNode:
    """tensor_bytes whose body first runs `body` (indented by the caller's lines), then returns `result`."""
    code = "def tensor_bytes(shape, dtype):\n" + "".join(f"    {line}\n" for line in body.splitlines()) + f"    return {result}\n"
    return sub.filled(NB1, **{TB: code})


def corpus(course: Path) -> dict[str, dict]:
    """student -> {"files": {name: submission}, "score": points, "report": [fragments] or ["ok"]}."""
    duplicated = sub.filled(NB1, **{TB: BITS})
    cell = next(c for c in duplicated.cells if sub.grade_id(c) == TB)
    copy = nbformat.from_dict(dict(cell))
    copy.source = REF[TB]
    duplicated.cells.insert(duplicated.cells.index(cell) + 1, copy)
    extra = sub.filled(NB1)
    extra.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "ex01_bonus_check", "grade": True,
                                                                                "points": 100, "solution": False}}))
    no_tests = sub.filled(NB1, **{TB: BITS})
    no_tests.cells = [c for c in no_tests.cells if not c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    edited_test = sub.filled(NB1, **{TB: BITS})
    for c in edited_test.cells:
        if sub.grade_id(c) == f"{TB}_check":
            c.source = "print('✅ tensor_bytes: 检查通过 (all checks passed)')"
    retyped = sub.filled(NB1)
    for i, c in enumerate(retyped.cells):
        if sub.grade_id(c) == FF:
            retyped.cells[i] = nbformat.v4.new_markdown_cell(c.source, metadata=c.metadata)
    other = course / "submitted" / "correct" / ASSIGNMENT / NB1
    gradebook_db = course / "gradebook.db"
    checks_py = ROOT / "lecture2" / "checks.py"
    one = lambda nb, score, report=("ok",): {"files": {NB1: nb}, "score": score, "report": list(report)}  # noqa: E731
    return {
        # honest work, saved as students save it
        "correct": one(sub.filled(NB1), 7),
        "blank": one(sub.release(NB1), 0),
        "planted-mistake": one(sub.filled(NB1, **{TB: BITS}), 5),
        "bom": one(sub.with_bom(sub.filled(NB1)), 7),
        "crlf": one(sub.with_crlf(sub.filled(NB1)), 7),
        "utf16": one(sub.utf16(sub.filled(NB1)), 7),
        "nbformat3": one(sub.nbformat3(sub.filled(NB1)), 7),
        "latin1": one(sub.as_text(sub.filled(NB1)).replace("字节", "\xe9").encode("latin-1", "replace"), 0,
                      [f"{S1}: not UTF-8 text"]),
        "stripped-metadata": one(sub.stripped(sub.filled(NB1)), 7,
                                 [f"{S1}: nbgrader metadata missing: answers found by their first line"]),
        "invalid-json": one("{ this is not a notebook", 0, [f"{S1}: not a valid notebook (invalid JSON"]),
        "missing-notebook": {"files": {}, "score": 0, "report": [f"{S1}: notebook missing (0 points)"]},
        "no-assignment-folder": {"files": {}, "folder": False, "score": 0,
                                 "report": ["no lec02/ folder: every notebook missing"]},
        "unexpected-files": {"files": {NB1: sub.filled(NB1), "lecture2.py": "raise SystemExit('shadow')\n",
                                       "data.bin": b"\0" * 1024}, "score": 7,
                             "report": ["unexpected files ignored: data.bin, lecture2.py"]},
        "duplicated-answer": one(duplicated, 5, [f"{S1}: answer cell {TB} appears 2 times (the first one is graded)"]),
        "unknown-grade-id": one(extra, 7, [f"{S1}: cells with unknown grade_ids ignored: ex01_bonus_check"]),
        "deleted-test-cells": one(no_tests, 5),
        "edited-test-cell": one(edited_test, 5),
        "retyped-cell": one(retyped, 7, [f"{S1}: answer cell {FF} is a markdown cell (run as code)"]),
        # faults that cost only their own exercise or notebook
        "infinite-loop": one(inside_tensor_bytes("while True:\n    pass"), 5, [f"{S1}: a cell timed out"]),
        "memory-hog": one(with_code("hog = bytearray(40 * 2**30)\n", gid=WM), 5, [f"{S1}: out of memory"]),
        "swallows-timeouts": one(with_code(
            "import time\ndef spin():\n    while True:\n        try:\n            time.sleep(0.5)\n"
            "        except BaseException:\n            pass\nstarted = spin()\n"), 0,
            [f"{S1}: stopped at the notebook's time limit"]),
        "spins-in-background": one(inside_tensor_bytes(
            "import time\nwhile True:\n    try:\n        time.sleep(0.5)\n    except BaseException:\n        pass"),
            5, [f"{S1}: a cell timed out"]),
        # partial credit: the check groups a half-right answer passes
        "allocates": one(inside_tensor_bytes("", "torch.empty(shape, dtype=dtype).nbytes"), 6,
                         ["ok"]),
        "memorised": one(inside_tensor_bytes("table = {(3, 4): 48, (2, 3, 5): 60, (1024,): 1024, (): 8}",
                                             "table.get(shape, 2**60)"), 6.5),
        "prints-points": one(inside_tensor_bytes("print('PRINTED-' + 'BY-THE-STUDENT', shape)\nprint('✅ tensor_bytes: 检查通过 (all checks passed)')",
                                                 "math.prod(shape) * dtype.itemsize * 8"), 5),
        # attacks: the static scan withholds them, the sandbox would confine them
        "gradebook-sql": one(with_code("import sqlite3\n", "\nsqlite3.connect('../../../gradebook.db').execute("
                                       "'UPDATE grade SET manual_score=100')\n"), 5,
                             [f"{S1}: withheld for review: {TB} line 1: import of sqlite3"]),
        "course-folder": one(inside_tensor_bytes("from pathlib import Path\nimport sys\n"
                                                 "(Path(sys.prefix).parent / 'lecture2' / 'checks.py').write_text('x')"), 5,
                             [f"{S1}: withheld for review: {TB} line 2: import of pathlib"]),
        "reads-solutions": one(inside_tensor_bytes("src = open('../../../solutions/lec02/01_tensors_dtypes.ipynb').read()"), 5,
                               [f"{S1}: withheld for review: {TB} line 2: open (file access)"]),
        "input-transformer": one(with_code("get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])\n"), 5,
                                 [f"{TB} line 1: get_ipython (IPython's hooks)"]),
        "setprofile": one(with_code("import sys\nsys.setprofile(lambda *a: None)\n"), 5,
                          [f"{TB} line 1: import of sys"]),
        "displayhook": one(inside_tensor_bytes("get_ipython().displayhook('ok')", "0"), 5,
                           [f"{TB} line 2: get_ipython (IPython's hooks)"]),
        "always-equal": one(sub.filled(NB1, **{TB: "class Any(int):\n    def __eq__(self, other):\n        return True\n"
                                                    "    __hash__ = int.__hash__\n\n"
                                                    "def tensor_bytes(shape, dtype):\n    return Any(0)\n"}), 5,
                            [f"{TB} line 1: class Any subclasses int", f"{TB} line 2: defines __eq__"]),
        "frame-reader": one(inside_tensor_bytes("import sys\nwant = sys._getframe(1).f_locals.get('measured')", "want"), 5,
                            [f"{TB} line 3: attribute .f_locals"]),
        "traceback-frames": one(inside_tensor_bytes(
            "try:\n    raise ValueError\nexcept ValueError as e:\n    f = e.__traceback__.tb_frame.f_back", "0"), 5,
            [f"{TB} line 5: dunder attribute .__traceback__"]),
        "history": one(inside_tensor_bytes("print(In[-1])", "0"), 5, [f"{TB} line 2: In (IPython's input history)"]),
        "pre-run-hook": one(with_code("get_ipython().events.register('pre_run_cell', lambda *a: None)\n"), 5,
                            [f"{TB} line 1: get_ipython"]),
        "patches-tensor": one(with_code("torch.Tensor.nbytes = property(lambda t: 0)\n", gid=TB), 5,
                              [f"{TB} line 1: assignment to an attribute of `torch`"]),
        "patches-checks": one(sub.filled(NB1, **{WM: "import lecture2.checks\nlecture2.checks.expect_close = lambda *a, **k: None\n"
                                                    "def weight_memory(n, dtype, unit='GB'):\n    return 0.0\n"}), 5,
                              [f"{WM} line 1: import of lecture2.checks"]),
        "patches-math": one(sub.filled(NB1, **{WM: "math.isclose = lambda *a, **k: True\n"
                                                  "def weight_memory(n, dtype, unit='GB'):\n    return 0.0\n"}), 5,
                            [f"{WM} line 1: assignment to an attribute of `math`"]),
        "rebinds-math": one(sub.filled(NB1, **{TB: "class M:\n    prod = staticmethod(lambda s: 0)\nmath = M()\n" + BITS}), 5,
                            [f"{TB} line 3: rebinds `math`, which the notebook defines"]),
        "reads-test-globals": one(inside_tensor_bytes("", "rng.randint(0, 1)"), 5, [f"{TB} line 2: reads `rng`"]),
        "global-checks": one(inside_tensor_bytes("global checks\nchecks = None"), 5, [f"{TB} line 1: `global checks`"]),
        "format-reader": one(inside_tensor_bytes("s = '{0.__globals__}'.format(tensor_bytes)"), 5,
                             [f"{TB} line 2: .format on a string that is not a plain literal"]),
        "torch-sys": one(inside_tensor_bytes("torch.sys.modules['lecture2.checks'].expect_equal = print"), 5,
                         [f"{TB} line 2: attribute .sys"]),
        "threads": one(with_code("import threading\n"), 5, [f"{TB} line 1: import of threading"]),
        # allowed by the instructor after review: the sandbox and the signed report still hold
        "fake-report": {"files": {NB1: inside_tensor_bytes(
            "import lecture2.checks\nwith lecture2.checks.exercise('tensor_bytes'):\n    pass",
            "math.prod(shape) * dtype.itemsize * 8")}, "score": 5, "allow": [TB], "report": ["ok"]},
        "frames-allowed": {"files": {NB1: inside_tensor_bytes(
            "import sys\nframe, seen = sys._getframe(1), []\nwhile frame is not None:\n"
            "    seen += [v for k, v in frame.f_locals.items() if k == 'measured']\n    frame = frame.f_back",
            "seen[0] if seen else 0")}, "score": 5, "allow": [TB], "report": ["ok"]},
        "escape": {"files": {NB1: sub.filled(NB1, **{TB: ESCAPE.format(other=other, gradebook=gradebook_db,
                                                                        checks=checks_py, course=course)})},
                   "score": 7, "allow": [TB], "report": ["ok"]},
    }


def two_notebook_corpus() -> dict[str, dict]:
    return {
        "segfault-01": {"files": {NB1: with_code("import ctypes\n", "\nctypes.string_at(0)\n", gid=WM),
                                  NB2: sub.filled(NB2)}, "score": 5 + 7, "allow": [WM],
                        "report": [f"{S1}: the kernel died in cell"]},
        "invalid-01": {"files": {NB1: "not json", NB2: sub.filled(NB2)}, "score": 7,
                       "report": [f"{S1}: not a valid notebook"]},
    }


ESCAPE = '''import os, socket, subprocess
ATTEMPTS = []

def _try(what, fn):
    try:
        fn()
        ATTEMPTS.append(what + ": done")
    except Exception as err:
        ATTEMPTS.append(what + ": " + type(err).__name__)

def tensor_bytes(shape, dtype):
    if not ATTEMPTS:
        _try("write another submission", lambda: open({other!r}, "w").write("{{}}"))
        _try("write the gradebook", lambda: open({gradebook!r}, "a").write("x"))
        _try("write lecture2", lambda: open({checks!r}, "a").write("\\nraise SystemExit"))
        _try("list the course", lambda: os.listdir({course!r}))
        _try("network", lambda: socket.create_connection(("1.1.1.1", 80), timeout=1))
        _try("signal pid 1 of the host", lambda: os.kill(1, 0))
        subprocess.Popen(["sh", "-c", "sleep 2; echo pwned > /tmp/lecture2-escape-marker; echo x >> {gradebook}"],
                         start_new_session=True)
        print(ATTEMPTS)
    return math.prod(shape) * dtype.itemsize
'''


def make_course(root: Path, names: list[str], cases_of) -> tuple[Path, dict]:
    course = root
    shutil.copy(ROOT / "nbgrader_config.py", course)
    for kind, folder in (("solutions", SOLUTIONS), ("notebooks", RELEASE)):
        (course / kind / ASSIGNMENT).mkdir(parents=True)
        for name in names:
            shutil.copy(folder / name, course / kind / ASSIGNMENT)
    cases = cases_of(course)
    for student, case in cases.items():
        folder = course / "submitted" / student / ASSIGNMENT
        if not case.get("folder", True):
            folder.parent.mkdir(parents=True)
            (folder.parent / "notes.txt").write_text("handed in at the wrong level")
            continue
        folder.mkdir(parents=True)
        for name, nb in case["files"].items():
            sub.write(nb, folder / name)
    return course, cases


def _allowed(cases: dict) -> set[str]:
    return {f"{s}/{g}" for s, case in cases.items() for g in case.get("allow", [])}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course, cases = make_course(tmp_path_factory.mktemp("class"), [NB1], corpus)
    marker = Path("/tmp/lecture2-escape-marker")
    marker.unlink(missing_ok=True)
    checks_before = hashlib.sha256((ROOT / "lecture2" / "checks.py").read_bytes()).hexdigest()
    correct_before = (course / "submitted" / "correct" / ASSIGNMENT / NB1).read_bytes()
    settings = cli.Settings(jobs=2, cell_timeout=10, notebook_timeout=60, memory_limit=cli.parse_bytes("4GiB"),
                            allow=_allowed(cases))
    start = time.perf_counter()
    students = cli.grade_class(course, settings)
    seconds = time.perf_counter() - start
    time.sleep(3)  # the escape's detached process would have written by now
    return {"course": course, "cases": cases, "students": {s.name: s for s in students}, "seconds": seconds,
            "untouched": (checks_before == hashlib.sha256((ROOT / "lecture2" / "checks.py").read_bytes()).hexdigest(),
                          correct_before == (course / "submitted" / "correct" / ASSIGNMENT / NB1).read_bytes(),
                          not marker.exists())}


def test_every_student_gets_exactly_what_they_earned(graded):
    """Does each submission earn what it honestly earns: no more from an attack, no less from a fault?"""
    cases, students = graded["cases"], graded["students"]
    assert set(students) == set(cases), "a student was lost"
    wrong = {n: (students[n].total, c["score"]) for n, c in cases.items() if students[n].total != c["score"]}
    assert not wrong, f"(got, expected) points: {wrong}"


def test_every_problem_is_named_in_the_report_line(graded):
    max_total = sum(gradebook.max_scores(graded["course"]).values())
    for name, case in graded["cases"].items():
        line = cli.report_line(graded["students"][name], max_total)
        assert line.startswith(f"{name}: {case['score']:g}/{max_total:g} — "), line
        if case["report"] == ["ok"]:
            assert line.endswith("— ok"), line
        for fragment in case["report"]:
            assert fragment in line, f"{name}: {fragment!r} not in {line!r}"


def test_the_sandbox_kept_the_course_and_other_students_intact(graded):
    """Did the instructor-allowed escape attempt change nothing outside its own scratch folder?"""
    checks_same, other_same, no_marker = graded["untouched"]
    assert checks_same, "lecture2/checks.py was modified"
    assert other_same, "another student's submission was modified"
    assert no_marker, "a detached process of a student survived the sandbox"
    with Gradebook(gradebook.db_url(graded["course"])) as gb:
        assert gb.find_submission(ASSIGNMENT, "correct").score == 7


def test_grades_csv_lists_every_student_from_the_gradebook(graded):
    course, cases = graded["course"], graded["cases"]
    rows = {r["student"]: r for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    assert set(rows) == set(cases)
    for name, case in cases.items():
        assert float(rows[name]["total"]) == case["score"], name
        assert rows[name]["max_total"] == "7"
    # one student graded again: the file still lists the whole class
    again = cli.grade_class(course, cli.Settings(jobs=1, cell_timeout=10, notebook_timeout=60), ["planted-mistake"])
    assert again[0].total == 5
    rows = {r["student"]: r for r in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    assert set(rows) == set(cases) and float(rows["correct"]["total"]) == 7


def test_feedback_shows_no_hidden_test_and_nothing_the_student_printed(graded):
    course = graded["course"]
    hidden = hidden_lines(NB1)
    for student in ("correct", "planted-mistake", "history", "prints-points", "infinite-loop"):
        page = (course / "feedback" / student / ASSIGNMENT / NB1.replace(".ipynb", ".html")).read_text("utf-8")
        text = html.unescape(re.sub(r"<[^>]+>", "", page))
        assert "checks.exercise" in text, "the visible checks are shown"
        lines = {line.strip() for line in text.splitlines()}
        assert not [h for h in hidden if h in lines], f"hidden test lines in {student}'s feedback"
        assert "20260201" not in text and "Traceback" not in text
    page = (course / "feedback" / "prints-points" / ASSIGNMENT / NB1.replace(".ipynb", ".html")).read_text("utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "PRINTED-BY-THE-STUDENT" not in text and "bits" in text, "the hint is shown, the student's print is not"


def test_the_sandbox_blocked_every_escape(graded):
    """What did the allowed escape attempt see from inside? (printed into its autograded notebook)"""
    nb = nbformat.read(graded["course"] / "autograded" / "escape" / ASSIGNMENT / NB1, as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    for attempt in ("write another submission", "write the gradebook", "write lecture2", "list the course", "network"):
        assert f"{attempt}: " in printed and f"{attempt}: done" not in printed, (attempt, printed[:500])


def test_one_fault_costs_only_its_notebook(tmp_path):
    """A crashed kernel or an invalid file in 01: 02 is graded as if nothing happened."""
    course, cases = make_course(tmp_path, [NB1, NB2], lambda course: two_notebook_corpus())
    students = {s.name: s for s in cli.grade_class(course, cli.Settings(jobs=2, cell_timeout=30, notebook_timeout=120,
                                                                        allow=_allowed(cases)))}
    for name, case in cases.items():
        assert students[name].total == case["score"], (name, students[name].scores)
        assert students[name].scores[S2] == 7
        line = cli.report_line(students[name], 14)
        assert all(f in line for f in case["report"]), line


def test_a_missing_sandbox_is_refused_with_a_clear_message(tmp_path, monkeypatch):
    (tmp_path / "nbgrader_config.py").write_text("")
    (tmp_path / "submitted" / "x").mkdir(parents=True)
    monkeypatch.setattr(sandbox, "BWRAP", "bwrap-not-installed")
    with pytest.raises(SystemExit, match="bubblewrap .* not installed.*--unsafe-no-sandbox"):
        cli.grade_class(tmp_path, cli.Settings())


def test_bad_course_folder_is_explained(tmp_path):
    with pytest.raises(SystemExit, match="not the course folder"):
        cli.grade_class(tmp_path, cli.Settings())
    (tmp_path / "nbgrader_config.py").write_text("")
    with pytest.raises(SystemExit, match="no submissions"):
        cli.grade_class(tmp_path, cli.Settings())


def test_the_mistakes_table_counts_exactly_who_made_each_mistake(graded):
    """mistakes.csv: the bits-for-bytes hint is drawn by exactly the students whose tensor_bytes counts bits
    (and whose answer ran); an unfilled notebook is 'not-implemented' on every exercise."""
    rows = list(csv.DictReader((graded["course"] / "mistakes.csv").open(encoding="utf-8")))
    by_key = {(r["test"], r["hint_key"]): r for r in rows}
    bits = by_key[(f"{TB}_check", "bits_for_bytes")]
    assert bits["who"].split(";") == sorted(["planted-mistake", "duplicated-answer", "deleted-test-cells",
                                             "edited-test-cell", "prints-points", "fake-report"])
    assert int(bits["students"]) == 6
    for test in (f"{TB}_check", f"{FF}_check", f"{WM}_check"):
        assert by_key[(test, "not-implemented")]["who"] == "blank"
    page = (graded["course"] / "class_report" / "index.html").read_text(encoding="utf-8")
    assert "gradebook-sql" in page and "import of sqlite3" in page, "withheld answers are listed for review"
    assert (graded["course"] / "class_report" / "scores.png").stat().st_size > 1000


@pytest.mark.parametrize("args, message", [
    (["--jobs", "0"], "must be positive"),
    (["--notebook-timeout", "-1"], "must be positive"),
    (["--memory-limit", "4XB"], "not a memory size"),
    (["--memory-limit", "100MB"], "below 1GiB"),
    (["--allow", "bob"], "STUDENT/GRADE_ID"),
])
def test_bad_options_are_refused_with_a_message(args, message, capsys):
    with pytest.raises(SystemExit) as err:
        cli.main(args)
    assert err.value.code == 2 and message in capsys.readouterr().err
