"""lecture2_grader: grades the course's notebooks so that no student's code can set a score.

Two processes grade each notebook. The student's process (judging/kernel.py, in a bubblewrap sandbox) runs the
student's answers and receives each check's inputs; it sends back plain data (lecture2.wire) and holds no key,
no expected value and no hidden test. The judge (judging/judge.py) runs the instructor's test cells, hidden tests
included, with every name an answer defines reaching the student's process through lecture2.answers; it
computes every verdict, tolerance, check group and hint, and never loads a student's object.

A notebook goes through pipeline.py (prepare, judge, finish: the order is stated there, once); a class through
classrun.py. The package by layer, top first, each module using only those of its own layer and the layers below
(tests/test_architecture.py holds them against the code; docs/architecture.md says what each module holds), and
judging/kernel.py, the student's process, using nothing of the grader:

<!-- BEGIN GENERATED layers -->
    commands                    __init__, __main__, cli, nbgrader_hooks, watch
    the class                   classpredictions, classreport, classrun, export, handin
    where judges run, the term  collect, gradebook, intake/, run/, validate
    one notebook                artifacts, feedback, pipeline, readers
    a notebook's parts          advice, judging/, owncells, plan, release_feedback, report, scan, score, store, submission
    ground                      course, draws, files, messages, predictions, records, runtime, sandbox, source, text
<!-- END GENERATED layers -->

Around grading, the term: intake/ and collect.py take an LMS download into submitted/, notebook by notebook,
earlier copies kept; handin.py a student's hand-in zip; export.py the grades for Canvas and Moodle.
Everything a student controls is escaped where it is shown (text.py).
"""
from __future__ import annotations

ASSIGNMENT = "lec02"
