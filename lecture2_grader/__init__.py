"""lecture2_grader: grades the course's notebooks so that no student's code can set a score.

Two processes grade each notebook. The student's process (kernel.py, in a bubblewrap sandbox) runs the
student's answers and receives each check's inputs; it sends back plain data (lecture2.wire) and holds no key,
no expected value and no hidden test. The judge (judge.py) runs the instructor's test cells, hidden tests
included, with every name an answer defines reaching the student's process through lecture2.answers; it
computes every verdict, tolerance, check group and hint, and never loads a student's object.

The stages, in the order a submission meets them (pipeline.py runs them; validate.py, cli.py and every
executor call the pipeline):

    submission.py  read the file as students save it; the answer cells by grade_id, their own helper cells
    scan.py        advisory: constructs worth the instructor's look (it never withholds)
    plan.py        what each process runs: the student's process the answers and the cells they need, the
                   judge the test cells
    judge.py       runs the test cells; link.py its end of the wire, kernel.py the student's end,
                   sandbox.py the walls (namespaces, read-only binds, memory filesystems, cgroups, time)
    score.py       points from the judge's results and the instructor's notebook only
    artifacts.py   the autograded notebook, the grading summary, feedback.py's page
    gradebook.py   nbgrader's gradebook and grades.csv; report.py one line per student;
                   classreport.py mistakes.csv and class_report/
    store.py       each notebook's judged results, keyed by content hashes: a regrade runs what changed
    executors.py   where judges run: this machine's pool; cluster.py a Dask cluster (Slurm, Kubernetes)

Around grading, the term: intake/ and collect.py an LMS download into submitted/, notebook by notebook,
earlier copies kept; handin.py a student's hand-in zip; export.py the grades for Canvas and Moodle;
nbgrader_hooks.py formgrader's buttons through this grader; validate.py `make validate`.

Everything a student controls is escaped where it is shown (text.py).
"""
from __future__ import annotations

ASSIGNMENT = "lec02"
STAGES = ("submission", "scan", "plan", "judge", "score", "artifacts", "gradebook")
