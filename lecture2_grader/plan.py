"""Stage 2: what each process runs, made from the instructor's notebook and a student's answers.

Two processes grade a notebook, and each gets its own plan:

- the student's process (the kernel, in its sandbox) runs the student's answer cells (the release's stub
  where an answer is missing), the student's own cells that only define things (imports, functions, classes,
  assignments: their helpers), and those of the instructor's other code cells that define a name the answers
  read, directly or through another such cell. (If an answer reads names dynamically, with `globals()`,
  `eval`, `exec`, `vars`, IPython magics or `import __main__`, every instructor cell runs.) The instructor's
  demos and measurements that nothing needs are left out; a student's cells that do more than define things
  (a print, a plot, a training loop) are not run, and their feedback says so. Cells run in the notebook's
  order, each before the test cells that come after it.
- the judge runs the instructor's test cells (hidden tests included) with the names the answer cells define
  reaching the student's process. The student's process never receives a test cell.

The student's other cells, their test cells, outputs and metadata never run and never count.
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from .course import Notebook, top_level_names
from .submission import Answers, StudentCell

# Names through which code reads the notebook's namespace without naming what it reads.
DYNAMIC = {"globals", "locals", "vars", "eval", "exec", "compile", "__import__", "get_ipython", "__builtins__", "dir",
           "__main__"}
BUILTINS = set(dir(builtins))


def _python(source: str) -> str | None:
    """A cell as plain Python (IPython's magics and `!` lines turned into calls), or None if it does not parse."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        text = TransformerManager().transform_cell(source)
        ast.parse(text)
        return text
    except Exception:  # SyntaxError, RecursionError, MemoryError, a transformer's own error
        return None


def reads(source: str) -> set[str] | None:
    """Every name a cell reads anywhere (in functions too), builtins left out; None when its reads cannot be
    known (it does not parse, or reads names dynamically)."""
    text = _python(source)
    if text is None:
        return None
    try:
        tree = ast.parse(text)
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(m.split(".")[0] in ("__main__", "builtins") for m in modules):
                    return None
    except (RecursionError, MemoryError):
        return None
    if found & DYNAMIC:
        return None
    return found - BUILTINS


def only_defines(source: str) -> bool:
    """Does a student's cell only define things (imports, def, class, assignments, docstrings, and if/try blocks
    of those)? Such a cell is a helper the answers may use, and the grader runs it."""
    text = _python(source)
    if text is None:
        return False

    def plain(statements) -> bool:
        for node in statements:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                 ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Pass)):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            if isinstance(node, ast.If) and plain(node.body) and plain(node.orelse):
                continue
            if isinstance(node, ast.Try) and plain(node.body) and plain(node.orelse) and plain(node.finalbody) \
                    and all(plain(h.body) for h in node.handlers):
                continue
            return False
        return True

    try:
        return plain(ast.parse(text).body)
    except (RecursionError, MemoryError):
        return False


@dataclass
class KernelPlan:
    cells: list[dict]  # {index, at, kind, grade_id, source}: "at" orders them among the test cells
    skipped_own: list[StudentCell]  # the student's cells that do more than define things: not run
    everything: bool  # every instructor cell runs (the answers' reads could not be known)


def kernel_plan(nb: Notebook, answers: Answers) -> KernelPlan:
    """The cells the student's process runs, in order (see the module's doc)."""
    entries = []
    for cell in nb.cells:
        if cell.kind == "answer":
            source = answers.sources.get(cell.grade_id, cell.visible)
            entries.append({"index": cell.index, "at": float(cell.index), "kind": "answer", "grade_id": cell.grade_id,
                            "source": source})
    own = sorted(answers.own_cells, key=lambda c: c.position)
    run_own = [c for c in own if only_defines(c.source)]
    skipped = [c for c in own if c not in run_own]
    for k, c in enumerate(run_own):
        entries.append({"index": 100_000 + c.position, "at": c.anchor + 0.5 + k * 1e-4, "kind": "own",
                        "grade_id": None, "source": c.source})
    needed: set[str] = set()
    everything = False
    for entry in entries:
        got = reads(entry["source"])
        if got is None:
            everything = True
        else:
            needed |= got
    course = [c for c in nb.cells if c.kind == "code"]
    chosen = []
    for cell in reversed(course):  # a cell is needed when it defines a needed name; then what it reads is too
        defines = set(top_level_names(cell.source))
        if everything or defines & needed:
            chosen.append(cell)
            needed |= reads(cell.source) or set()
    for cell in chosen:
        entries.append({"index": cell.index, "at": float(cell.index), "kind": "code", "grade_id": cell.grade_id,
                        "source": cell.source})
    entries.sort(key=lambda e: e["at"])
    return KernelPlan(entries, skipped, everything)


def judge_tests(nb: Notebook) -> list[dict]:
    """The test cells the judge runs, in order, with their sources (hidden tests included)."""
    return [{"index": c.index, "grade_id": c.grade_id, "source": c.source} for c in nb.tests]
