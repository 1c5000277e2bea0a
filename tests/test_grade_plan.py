"""lecture2_grader.plan: which cells the student's process runs, and which the judge runs."""
from __future__ import annotations

from conftest import RELEASE, SOLUTIONS
from submissions import reference_answers
from lecture2_grader import course, owncells, plan
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
    """Notebook 10's process-group demos define `n` and `stage` as loop variables; answers with parameters of those
    names do not need them (they ran for every student, 9 s a notebook). A function that reads a demo's global
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
    answers["ex10_comm_bytes"] += "\ndef _uses_demo():\n    return BIG_VOCAB\n"
    p = plan.kernel_plan(nb10, Answers(sources=answers))
    assert any("BIG_VOCAB = " in c["source"] for c in p.cells if c["kind"] == "code")


def test_dynamic_reads_run_every_instructor_cell():
    answers = reference_answers(NAME)
    answers["ex03_gpt_params"] = "def gpt_params(*a):\n    return globals()['x']\n"
    p = plan.kernel_plan(NB, Answers(sources=answers))
    assert p.everything and {c.index for c in NB.cells if c.kind == "code"} <= {c["index"] for c in p.cells}


def _own_plan(answer_source: str, *own_sources: str) -> plan.KernelPlan:
    """Notebook 03's plan with gpt_params's answer `answer_source` and own cells after it."""
    answers = reference_answers(NAME)
    answers["ex03_gpt_params"] = answer_source
    own = [StudentCell(5 + k, k, source) for k, source in enumerate(own_sources)]
    return plan.kernel_plan(NB, Answers(sources=answers, own_cells=own))


def _ran(p: plan.KernelPlan) -> list[str]:
    return [c["source"] for c in p.cells if c["kind"] == "own"]


READS_HELPER = "def gpt_params(*a):\n    return helper(GiB)\n"


def test_own_cells_run_when_an_answer_needs_them_and_they_only_define_things():
    own = ["import math\nGiB = 2**30\ndef helper(x):\n    return x\ntry:\n    import numpy\nexcept ImportError:\n    numpy = None",
           "print(helper(1))", "%timeit helper(1)", "for i in range(3):\n    pass"]
    p = _own_plan(READS_HELPER, *own)
    assert _ran(p) == [own[0]]
    assert [c.position for c, _ in p.skipped_own] == [1, 2, 3]
    at = next(c["at"] for c in p.cells if c["kind"] == "own")
    assert 5 < at < 6, "a helper runs right after the cell it followed in the student's notebook"


def test_an_own_cell_nothing_needs_is_named_and_not_run():
    """The issue's honest exploration cell (no answer reads my_speeds) and a helper nobody calls: skipped, named."""
    explore = "my_speeds = {dt: my_matmul_seconds(1024, dt) for dt in (torch.float32, torch.bfloat16)}"
    p = _own_plan(READS_HELPER, "GiB = 2**30\ndef helper(x):\n    return x", "def unused():\n    return 1", explore)
    assert _ran(p) == ["GiB = 2**30\ndef helper(x):\n    return x"]
    skipped = {c.source: v for c, v in p.skipped_own}
    assert skipped["def unused():\n    return 1"].doing == plan.NOT_NEEDED
    assert "my_matmul_seconds" in skipped[explore].doing


def test_an_own_cell_runs_when_an_own_cell_that_runs_needs_it():
    p = _own_plan("def gpt_params(*a):\n    return outer()\n", "def inner():\n    return 1",
                  "def outer():\n    return inner()", "def spare():\n    return 2")
    assert _ran(p) == ["def inner():\n    return 1", "def outer():\n    return inner()"]


def test_reads_follow_names_through_functions_and_magics():
    assert plan.reads("def f(x):\n    return math.prod(x) * torch.float32.itemsize") >= {"math", "torch"}
    assert plan.reads("%config InlineBackend.figure_format = 'png'") is None  # magics: every cell runs
    assert plan.reads("def f(:") is None
    assert plan.reads(" x = y") == {"y"}  # an indented cell: IPython dedents it, and so does the analysis




def test_own_cells_that_could_change_the_course_do_not_run_however_they_are_written():
    """The red team's own cells: a call in an assignment, an alias of a course module and a change through it, an
    attribute set on anything imported, names bound inside a function, code run by a decorator, a default value, a
    class body, a metaclass or a base class's hook, a module a cell could have written. Each is named with what it
    does."""
    kinds = owncells.student_names(["def gpt_params(*a):\n    cfg = 1\n    return cfg\n", "def train_step():\n    pass"])
    cases = {
        "losses = [train_step() for _ in range(10**6)]": "train_step",
        "est = lecture2.estimate\nest.SECONDS_PER_DAY = 1": "lecture2.estimate",
        "import lecture2.estimate as est\nalias = est": "est",
        "import lecture2.answers\nlecture2.answers.instruments_off = lambda *a: None": "lecture2.answers.instruments_off",
        "from lecture2 import answers\nanswers.instruments_off = None": "answers.instruments_off",
        "cfg.x = 1": "cfg.x",  # cfg is a local of gpt_params, not theirs
        "def patch(f):\n    return f\n@patch\ndef g():\n    pass": "@patch",
        "def g(x=train_step()):\n    pass": "train_step",
        "class K:\n    lecture2.estimate.SECONDS_PER_DAY = 1": "K",
        "class K:\n    x = train_step()": "train_step",
        "class K(metaclass=type):\n    pass": "metaclass",
        "class B:\n    def __init_subclass__(cls):\n        pass": "__init_subclass__",
        "import made_at_runtime_by_an_answer": "not installed",
        "(x := 1)": "expr",
        "with open('/tmp/x') as f:\n    pass": "with",
    }
    for source, named in cases.items():
        verdict = owncells.own_cell(source, kinds)
        assert not verdict.runs and named in verdict.doing, (source, verdict)


def test_the_own_cell_rule_is_one_a_student_can_predict():
    """Does a change of the student's own objects run however it is written (a method call, an item assignment, an
    augmented assignment, an attribute of their function or class), and is anything else named with what it does
    and the names it touches?"""
    kinds = owncells.student_names(["RECIPES = {'a': 1}\ncache = {}\nclass Config:\n    pass\ncfg = Config()\nN = 3"])
    runs = ["RECIPES.update({'b': 2})", "RECIPES['c'] = 3", "RECIPES |= {'d': 4}", "cache.clear()",
            "Config.layers = 4", "N += 1", "del RECIPES['a']", "mine = []\nmine.append(1)",
            "%%time\nRECIPES.setdefault('e', 5)", "if True:\n    RECIPES.pop('a', None)",
            "import functools\n@functools.lru_cache(maxsize=None)\ndef f(n: int = 2) -> int:\n    return n",
            "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass P:\n    x: int = 1\n    def area(self):\n        return self.x",
            "DTYPES = (torch.float32, torch.bfloat16)\nGiB = 2**30\nscale = lambda u: {'GB': 1e9, 'GiB': GiB}[u]"]
    for source in runs:
        assert owncells.own_cell(source, kinds).runs, source
    skipped = {"print(RECIPES)": "print", "torch.manual_seed(0)": "torch.manual_seed", "math.pi = 3": "math",
               "for k in RECIPES:\n    pass": "for", "plt.rcParams['figure.dpi'] = 80": "plt",
               "GiB = 2**30\nGiB_table.update(x=1)": "GiB_table.update",
               "cfg.layers = 4": "cfg.layers", "x = cfg.width": "cfg"}  # cfg was made by a call: its class is theirs
    for source, named in skipped.items():
        verdict = owncells.own_cell(source, kinds)
        assert not verdict.runs and named in verdict.doing, (source, verdict)
    assert "RECIPES" in owncells.own_cell("RECIPES['z'] = 1\nprint(RECIPES)", kinds).touches


def test_an_own_cell_that_runs_is_scanned_like_an_answer(tmp_path):
    """An own cell the answers need, whose function reaches into frames: it runs, and the scan flags it by its first
    line (own cells that ran were never scanned)."""
    import nbformat

    import submissions as sub
    from lecture2_grader import pipeline
    from judging import runtime

    name = "01_tensors_dtypes.ipynb"
    nb = sub.filled(name, ex01_tensor_bytes="def tensor_bytes(shape, dtype):\n    return peek(shape) * dtype.itemsize\n")
    at = next(i for i, c in enumerate(nb.cells) if sub.grade_id(c) == "ex01_tensor_bytes")
    nb.cells.insert(at, nbformat.v4.new_code_cell("import math, sys\ndef peek(shape):\n"
                                                  "    sys._getframe(1)\n    return math.prod(shape)\n"))
    sub.write(nb, tmp_path / name)
    job = pipeline.prepare("ana", tmp_path / name, course.load(SOLUTIONS / name, RELEASE / name), runtime())
    assert any(c["kind"] == "own" for c in job.judge["cells"])
    assert any(f.startswith("own cell 1 「import math, sys」") and "imports sys" in f for f in job.findings), job.findings
