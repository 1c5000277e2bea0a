"""Stage 2: what each process runs, made from the instructor's notebook and a student's answers.

Two processes grade a notebook, and each gets its own plan:

- the student's process (the kernel, in its sandbox) runs the student's answer cells (the release's stub
  where an answer is missing), the student's own cells that only define things (imports, functions, classes,
  assignments, changes of their own objects: see `own_cell`), and those of the instructor's other code cells that define a name the answers
  read from the notebook's namespace, directly or through another such cell (a function's parameters and locals
  are its own: Python's scoping, from `symtable`, decides). (If an answer reads names dynamically, with `globals()`,
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
import symtable
from dataclasses import dataclass

from .course import Notebook, top_level_names
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


def created_names(sources: list[str]) -> set[str]:
    """The names a student's cells create at their top level: functions, classes and assignment targets (not
    imports: a module is everyone's). Objects under these names are the student's own."""
    names: set[str] = set()
    for source in sources:
        text = as_python(source)
        if text is None:
            continue
        try:
            tree = ast.parse(text)
        except (RecursionError, MemoryError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


@dataclass
class OwnCell:
    """What the own-cell rule says of one of a student's own cells."""

    runs: bool
    doing: str = ""  # for a cell that does not run: the first statement that is not a definition or a change of
    #                  the student's own objects, in words ("calls print", "loops: for")
    touches: tuple[str, ...] = ()  # the names it binds or changes, and the objects whose methods it calls


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def own_cell(source: str, created: set[str]) -> OwnCell:
    """The rule for a student's own cell, which a student can predict: it runs when every statement only defines
    names (imports, def, class, assignments to names, `pass`, docstrings, and if/try blocks of these) or changes an
    object the student's own cells created (item or attribute assignment, augmented assignment, `del`, or a method
    call on it: `RECIPES.update({...})`, `RECIPES["x"] = ...`, `RECIPES |= {...}`, `cache.clear()`). Anything else
    (a call of a function, a method of a module or of the course's objects, a loop, a `with`) keeps the whole cell
    from running; the grader says which cell and what it does."""
    text = as_python(source)
    if text is None:
        return OwnCell(False, "不是合法的 Python (does not parse)")
    mine = set(created)
    touched: list[str] = []

    def touch(name: str | None) -> None:
        if name and name not in touched:
            touched.append(name)

    def target_ok(target: ast.AST) -> bool:
        if isinstance(target, (ast.Tuple, ast.List)):
            return all(target_ok(t) for t in target.elts)
        if isinstance(target, ast.Starred):
            return target_ok(target.value)
        root = _root(target)
        touch(root)
        if isinstance(target, ast.Name):
            mine.add(target.id)
            return True
        return root in mine

    def first_bad(statements) -> str:
        for node in statements:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    touch((alias.asname or alias.name).split(".")[0])
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                touch(node.name)
                mine.add(node.name)
                continue
            if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
                continue
            if isinstance(node, ast.Assign):
                if all(target_ok(t) for t in node.targets):
                    continue
                return f"改了不是你创建的对象 (changes an object your cells did not create): {_root(node.targets[0])}"
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                if target_ok(node.target):
                    continue
                return f"改了不是你创建的对象 (changes an object your cells did not create): {_root(node.target)}"
            if isinstance(node, ast.Delete):
                if all(target_ok(t) for t in node.targets):
                    continue
                return "删除了不是你创建的对象 (deletes an object your cells did not create)"
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                func = node.value.func
                root = _root(func)
                if isinstance(func, ast.Attribute) and root in mine:
                    touch(root)
                    continue
                shown = ast.unparse(func)[:60]
                return f"调用了 (calls) {shown}"
            if isinstance(node, ast.If):
                why = first_bad(node.body) or first_bad(node.orelse)
                if not why:
                    continue
                return why
            if isinstance(node, ast.Try):
                why = first_bad(node.body) or first_bad(node.orelse) or first_bad(node.finalbody) \
                    or next((w for h in node.handlers for w in [first_bad(h.body)] if w), "")
                if not why:
                    continue
                return why
            kind = type(node).__name__.lower()
            return f"不只是定义 (does more than define things): {kind}"
        return ""

    try:
        why = first_bad(ast.parse(text).body)
    except (RecursionError, MemoryError):
        return OwnCell(False, "嵌套太深 (nested too deeply)")
    return OwnCell(not why, why, tuple(touched))


@dataclass
class KernelPlan:
    cells: list[dict]  # {index, at, kind, grade_id, source}: "at" orders them among the test cells
    skipped_own: list[tuple[StudentCell, OwnCell]]  # the student's own cells the rule does not run, and why
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
    created = created_names([*answers.sources.values(), *(c.source for c in own)])
    verdicts = {c.position: own_cell(c.source, created) for c in own}
    run_own = [c for c in own if verdicts[c.position].runs]
    skipped = [(c, verdicts[c.position]) for c in own if not verdicts[c.position].runs]
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
