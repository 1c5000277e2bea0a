"""Stage 2: what each process runs, made from the instructor's notebook and a student's answers.

Two processes grade a notebook, and each gets its own plan:

- the student's process (the kernel, in its sandbox) runs the student's answer cells (the release's stub
  where an answer is missing), the student's own cells that an answer (or such a cell) reads a name of and that only
  define things from literals and their own objects (owncells.py: nothing in them runs code, so they cannot change
  the course), and those of the instructor's other code cells that define a name the answers
  read from the notebook's namespace, directly or through another such cell (a function's parameters and locals
  are its own: Python's scoping, from `symtable`, decides). (If an answer reads names dynamically, with `globals()`,
  `eval`, `exec`, `vars`, IPython magics or `import __main__`, every instructor cell runs, and every own cell the
  rule allows.) The instructor's demos and measurements that nothing needs are left out; a student's cells that do
  more than define things (a print, a plot, a training loop) or that nothing needs are not run, and their feedback
  says so. Cells run in the notebook's order, each before the test cells that come after it.
- the judge runs the instructor's test cells (hidden tests included) with the names the answer cells define
  reaching the student's process. The student's process never receives a test cell.

The student's other cells, their test cells, outputs and metadata never run and never count.
"""
from __future__ import annotations

import ast
import builtins
import symtable
from dataclasses import dataclass

from .course import Notebook, top_level_names
from .owncells import OwnCell, own_cell, student_names
from .source import as_python
from .submission import Answers, StudentCell

# Names through which code reads the notebook's namespace without naming what it reads.
DYNAMIC = {"globals", "locals", "vars", "eval", "exec", "compile", "__import__", "get_ipython", "__builtins__", "dir",
           "__main__"}
BUILTINS = set(dir(builtins))


def reads(source: str) -> set[str] | None:
    """The names a cell may read from the notebook's namespace, builtins left out; None when its reads cannot be
    known (it does not parse, or reads names dynamically). At the top level every name read counts; inside a
    function, class or comprehension only those that resolve to the module (Python's own scoping, from
    `symtable`): a parameter or local called `n` does not make the cell that defined a global `n` run."""
    text = as_python(source)
    if text is None:
        return None
    try:
        tree = ast.parse(text)
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(m.split(".")[0] in ("__main__", "builtins") for m in modules):
                    return None
        if names & DYNAMIC:
            return None
        found = _module_reads(symtable.symtable(text, "<cell>", "exec"))
    except (RecursionError, MemoryError, SyntaxError, ValueError):
        return None
    return found - BUILTINS


def _module_reads(table: symtable.SymbolTable) -> set[str]:
    """The names read in `table` and the scopes inside it that Python looks up in the module's namespace."""
    top = table.get_type() == "module"
    found = {sym.get_name() for sym in table.get_symbols()
             if sym.is_referenced() and (top or sym.is_global())}  # a free name is an enclosing function's
    for child in table.get_children():
        found |= _module_reads(child)
    return found


NOT_NEEDED = "没有答案用到它定义或改动的名字，评分时不需要它 (no answer reads a name it defines or changes: not needed)"


@dataclass
class KernelPlan:
    cells: list[dict]  # {index, at, kind, grade_id, source}: "at" orders them among the test cells
    skipped_own: list[tuple[StudentCell, OwnCell]]  # the student's own cells the rule does not run, and why
    everything: bool  # every instructor cell runs (the answers' reads could not be known)
    read: set[str] | None = None  # the names the answers and the own cells that run read (None: not known)


def _needed_own(candidates: list[StudentCell], verdicts: dict[int, OwnCell],
                read: set[str] | None) -> tuple[set[int], set[str] | None]:
    """The positions of the candidate own cells that an answer, or an own cell that runs, reads a name of (bound or
    changed: the touches), by a worklist over names (linear); and every name read. None reads: all of them."""
    if read is None:
        return {c.position for c in candidates}, None
    by_name: dict[str, list[StudentCell]] = {}
    for cell in candidates:
        for name in verdicts[cell.position].touches:
            by_name.setdefault(name, []).append(cell)
    chosen: set[int] = set()
    read = set(read)
    todo = list(read)
    while todo:
        for cell in by_name.pop(todo.pop(), []):
            if cell.position in chosen:
                continue
            chosen.add(cell.position)
            more = reads(cell.source)
            if more is None:
                return {c.position for c in candidates}, None
            todo += [n for n in more - read]
            read |= more
    return chosen, read


def kernel_plan(nb: Notebook, answers: Answers) -> KernelPlan:
    """The cells the student's process runs, in order (see the module's doc)."""
    entries = []
    for cell in nb.cells:
        if cell.kind == "answer":
            source = answers.sources.get(cell.grade_id, cell.visible)
            entries.append({"index": cell.index, "at": float(cell.index), "kind": "answer", "grade_id": cell.grade_id,
                            "source": source})
    own = sorted(answers.own_cells, key=lambda c: c.position)
    course_names = {n for c in nb.cells if c.kind == "code" for n in top_level_names(c.source)}
    kinds = student_names([e["source"] for e in entries] + [c.source for c in own], course_names)
    verdicts = {c.position: own_cell(c.source, kinds) for c in own}
    read: set[str] | None = set()
    for entry in entries:
        got = reads(entry["source"])
        read = None if got is None or read is None else read | got
    chosen, read = _needed_own([c for c in own if verdicts[c.position].runs], verdicts, read)
    skipped = []
    for c in own:
        if c.position in chosen:
            continue
        verdict = verdicts[c.position]
        skipped.append((c, verdict if not verdict.runs else OwnCell(False, NOT_NEEDED, verdict.touches)))
    run_own = [c for c in own if c.position in chosen]
    for k, c in enumerate(run_own):
        entries.append({"index": 100_000 + c.position, "at": c.anchor + 0.5 + k * 1e-4, "kind": "own",
                        "grade_id": None, "source": c.source})
    everything = read is None
    needed: set[str] = set(read or ())
    course = [c for c in nb.cells if c.kind == "code"]
    chosen_course = []
    for cell in reversed(course):  # a cell is needed when it defines a needed name; then what it reads is too
        defines = set(top_level_names(cell.source))
        if everything or defines & needed:
            chosen_course.append(cell)
            needed |= reads(cell.source) or set()
    for cell in chosen_course:
        entries.append({"index": cell.index, "at": float(cell.index), "kind": "code", "grade_id": cell.grade_id,
                        "source": cell.source})
    entries.sort(key=lambda e: e["at"])
    return KernelPlan(entries, skipped, everything, read)


def judge_tests(nb: Notebook) -> list[dict]:
    """The test cells the judge runs, in order, with their sources (hidden tests included)."""
    return [{"index": c.index, "grade_id": c.grade_id, "source": c.source} for c in nb.tests]
