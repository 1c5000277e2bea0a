"""The class grader (`make grade`): every submission under submitted/, graded so that no student's code can
reach anything but its own answers.

The stages, one module each, in the order a submission meets them:

    submission.py  read the files as students save them (BOM, CRLF, encodings, nbformat versions) and pick
                   out the answer cells by grade_id                                       [trusted]
    splice.py      the notebook that runs: the instructor's notebook (hidden tests included) with only the
                   student's answer cells spliced in                                       [trusted]
    scan.py        the static scan of the answer cells: constructs that tamper withhold their exercise
                                                                                           [trusted]
    sandbox.py     one bubblewrap sandbox per notebook: its own scratch folder writable, the environment
                   read-only, nothing else visible, no network, its own PID namespace, a hard wall-clock
                   limit, every process dead before anything of it is read                 [the boundary]
    runner.py      runs INSIDE the sandbox: executes the cells and writes HMAC-signed events (cell ends,
                   check results) with a key it reads once from an inherited pipe          [untrusted side]
    score.py       verifies the events' signatures and computes each test cell's points from the
                   instructor's cell list: clamped, unknown cells earn nothing              [trusted]
    feedback.py    feedback HTML from trusted data only: no hidden test, input or seed      [trusted]
    gradebook.py   scores into nbgrader's gradebook, grades.csv from it (every student)   [trusted]
    report.py      one line per student: score and every problem, named                    [trusted]
    cli.py         `python -m tools.grade`: the class, several notebooks at once
    validate.py    `make validate` for students: the same splice, scan, run and score, no sandbox

Nothing a student's process writes decides a score except events that carry the run's signature, and the
signature key never exists outside the runner's memory and the grader's.
"""
from __future__ import annotations

ASSIGNMENT = "lec02"
