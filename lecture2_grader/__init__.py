"""lecture2_grader: grades the course's notebooks so that no student's code can set a score.

Two processes grade each notebook. The student's process (kernel.py, in a bubblewrap sandbox) runs the
student's answers and receives each check's inputs; it sends back plain data (lecture2.wire) and holds no key,
no expected value and no hidden test. The judge (judge.py) runs the instructor's test cells, hidden tests
included, with every name an answer defines reaching the student's process through lecture2.answers; it
computes every verdict, tolerance, check group and hint, and never loads a student's object.

A notebook goes through pipeline.py (prepare, execute, finish: the order is stated there, once); a class through
classrun.py. The package by layer, each using only those below it (docs/architecture.md draws it):

    commands      cli.py (make grade) and watch.py, validate.py, handin.py, collect.py, export.py,
                  release_feedback.py, nbgrader_hooks.py (formgrader's buttons through this grader)
    the class     classrun.py: a short loop over records; gradebook.py, report.py, classreport.py (and
                  classpredictions.py: the class's predictions beside each measurement)
    where judges  run/: the executor interface; local.py this machine, dask.py and clusters.py a Dask cluster
    run              (Slurm, Kubernetes); preflight.py the proof that the sandbox works
    one notebook  pipeline.py; readers.py reading its file within a time and memory limit; launch.py starting its
                  judge (preload*.py what the judges' fork server imports); artifacts.py and feedback.py what it
                  leaves; store.py its stored run
    prepare       submission.py (the file), source.py (a cell as Python), scan.py, plan.py, advice.py
    the boundary  judge.py, link.py (its end of the wire), kernel.py (the student's end), sandbox.py (the walls)
    records       records.py (Judged, StudentRun, ClassRun), predictions.py (a prediction cell read as data),
                  score.py (points), course.py (the instructor's
                  notebooks), runtime.py (a run's settings and every time limit), draws.py (the secrets hidden
                  cases are drawn from), files.py, text.py (escaping)

Around grading, the term: intake/ and collect.py take an LMS download into submitted/, notebook by notebook,
earlier copies kept; handin.py a student's hand-in zip; export.py the grades for Canvas and Moodle.
Everything a student controls is escaped where it is shown (text.py).
"""
from __future__ import annotations

ASSIGNMENT = "lec02"
