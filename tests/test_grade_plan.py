"""lecture2_grader.plan: which cells the student's process runs, and which the judge runs."""
from __future__ import annotations

from conftest import RELEASE, SOLUTIONS
from judging import reference_answers
from lecture2_grader import course, plan
from lecture2_grader.submission import Answers, StudentCell

NAME = "03_modules.ipynb"
NB = course.load(SOLUTIONS / NAME, RELEASE / NAME)


def kinds(p: plan.KernelPlan) -> list[str]:
    return [c["kind"] for c in p.cells]


def test_the_students_process_runs_the_answers_and_only_the_cells_they_need():
    p = plan.kernel_plan(NB, Answers(sources=reference_answers(NAME)))
    ran = {c["index"] for c in p.cells}
    assert {c.index for c in NB.cells if c.kind == "answer"} <= ran
    assert not ran & {c.index for c in NB.tests}, "no test cell reaches the student's process"
    setup = [c for c in NB.cells if c.kind == "code" and c.index in ran]
    assert setup and all("import" in c.source for c in setup[:1]), "the imports the answers read run"
    assert len(setup) < len([c for c in NB.cells if c.kind == "code"]), "demos nothing needs are left out"
    assert [c["at"] for c in p.cells] == sorted(c["at"] for c in p.cells)


def test_a_demo_runs_for_the_globals_an_answer_reads_not_for_its_parameters_and_locals():
    """Notebook 10's 4-process demo defines `n` and `stage` as loop variables; answers with parameters of those
    names do not need it (it ran for every student, 9 s a notebook). A function that reads a demo's global
    (`GiB` here) still runs the cell that defines it, and so do a comprehension's, a class body's and a
    default value's reads."""
    assert plan.reads("def f(n, stage):\n    k = n * stage\n    return [k * i for i in range(n)]\n") == set()
    assert plan.reads("def f(x):\n    return x / GiB\n") == {"GiB"}
    assert plan.reads("def f(xs, d=D):\n    return {k: v for k, v in xs if k in KEEP}\n") == {"D", "KEEP"}
    assert plan.reads("class C:\n    y = 1\n    def m(self):\n        return y\n") == {"y"}  # a class's y is not seen
    assert plan.reads("def outer():\n    k = 1\n    def inner():\n        return k + w\n    return inner\n") == {"w"}
    nb10 = course.load(SOLUTIONS / "10_sharding.ipynb", RELEASE / "10_sharding.ipynb")
    p = plan.kernel_plan(nb10, Answers(sources=reference_answers("10_sharding.ipynb")))
    ran = [c for c in nb10.cells if c.kind == "code" and c.index in {e["index"] for e in p.cells}]
    assert [c.index for c in ran] == [nb10.cells[1].index] and "import" in ran[0].source, [c.source[:80] for c in ran]
    answers = reference_answers("10_sharding.ipynb")
    answers["ex10_min_gpus"] += "\ndef _uses_demo():\n    return BIG_VOCAB\n"
    p = plan.kernel_plan(nb10, Answers(sources=answers))
    assert any("BIG_VOCAB = " in c["source"] for c in p.cells if c["kind"] == "code")


def test_dynamic_reads_run_every_instructor_cell():
    answers = reference_answers(NAME)
    answers["ex03_block_params"] = "def block_params(*a):\n    return globals()['x']\n"
    p = plan.kernel_plan(NB, Answers(sources=answers))
    assert p.everything and {c.index for c in NB.cells if c.kind == "code"} <= {c["index"] for c in p.cells}


def test_own_cells_run_when_they_only_define_things():
    own = [StudentCell(5, 0, "import math\nGiB = 2**30\ndef helper(x):\n    return x\ntry:\n    import numpy\nexcept ImportError:\n    numpy = None"),
           StudentCell(5, 1, "print(helper(1))"), StudentCell(9, 2, "%timeit helper(1)"), StudentCell(9, 3, "for i in range(3):\n    pass")]
    p = plan.kernel_plan(NB, Answers(sources=reference_answers(NAME), own_cells=own))
    run = [c["source"] for c in p.cells if c["kind"] == "own"]
    assert run == [own[0].source]
    assert [c.position for c, _ in p.skipped_own] == [1, 2, 3]
    at = next(c["at"] for c in p.cells if c["kind"] == "own")
    assert 5 < at < 6, "a helper runs right after the cell it followed in the student's notebook"


def test_reads_follow_names_through_functions_and_magics():
    assert plan.reads("def f(x):\n    return math.prod(x) * torch.float32.itemsize") >= {"math", "torch"}
    assert plan.reads("%config InlineBackend.figure_format = 'png'") is None  # magics: every cell runs
    assert plan.reads("def f(:") is None
    assert plan.reads(" x = y") == {"y"}  # an indented cell: IPython dedents it, and so does the analysis


def test_the_own_cell_rule_is_one_a_student_can_predict():
    """Does a change of the student's own objects run however it is written (a method call, an item assignment, an
    augmented assignment), and is anything else named with what it does and the names it touches?"""
    created = plan.created_names(["RECIPES = {'a': 1}\ncache = {}\nclass Config:\n    pass\ncfg = Config()"])
    runs = ["RECIPES.update({'b': 2})", "RECIPES['c'] = 3", "RECIPES |= {'d': 4}", "cache.clear()",
            "cfg.layers = 4\ncfg.width += 1", "del RECIPES['a']", "mine = []\nmine.append(1)",
            "%%time\nRECIPES.setdefault('e', 5)", "if True:\n    RECIPES.pop('a', None)"]
    for source in runs:
        assert plan.own_cell(source, created).runs, source
    skipped = {"print(RECIPES)": "print", "torch.manual_seed(0)": "torch.manual_seed", "math.pi = 3": "math",
               "for k in RECIPES:\n    pass": "for", "plt.rcParams['figure.dpi'] = 80": "plt",
               "GiB = 2**30\nGiB_table.update(x=1)": "GiB_table.update"}
    for source, named in skipped.items():
        verdict = plan.own_cell(source, created)
        assert not verdict.runs and named in verdict.doing, (source, verdict)
    assert "RECIPES" in plan.own_cell("RECIPES['z'] = 1\nprint(RECIPES)", created).touches
