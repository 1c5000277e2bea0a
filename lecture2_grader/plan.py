"""Stage 2: what each process runs, made from the instructor's notebook and a student's answers.

Two processes grade a notebook, and each gets its own plan:

- the student's process (the kernel, in its sandbox) runs the student's answer cells (the release's stub
  where an answer is missing), the student's own cells that an answer (or such a cell) reads a name of and that only
  define things from literals and their own objects (see `own_cell`: nothing in them runs code, so they cannot change
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


# ---- the student's names: what each is, as far as their cells' sources say

DATA, FUNCTION, CLASS, IMPORT, MIXED, MADE = "data", "function", "class", "import", "mixed", "made"
# data: bound only to displays (literals, and lists, tuples, sets, dicts of values that run none of their code):
#   a built-in container or value of theirs, which their own cells may change (items, methods, +=)
# function, class: a def, a lambda, a class of theirs; their own cells may set attributes on it
# import: a module; mixed: bound to several of the above: both may be read, neither changed
# made: anything else (a call's result, a comprehension, a loop variable): possibly an instance of their own class,
#   whose attributes, items and operators may run their code; own cells neither read into it nor change it
RUN_AT_DEFINITION = {"__init_subclass__", "__set_name__", "__class_getitem__", "__mro_entries__", "__prepare__"}
DECORATORS = {"lru_cache", "cache", "cached_property", "total_ordering", "wraps", "dataclass", "no_grad",
              "inference_mode", "enable_grad", "staticmethod", "classmethod", "property", "abstractmethod",
              "overload", "final", "setter", "getter", "deleter", "singledispatch"}  # run library code, never theirs


def _merge(kinds: set[str]) -> str:
    if len(kinds) == 1:
        return next(iter(kinds))
    return MADE if MADE in kinds else MIXED


def _statements(body: list):
    """Statements at a cell's top level, and inside top-level if/try blocks (in order)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            yield from _statements([*node.body, *node.orelse, *getattr(node, "finalbody", []),
                                    *(s for h in getattr(node, "handlers", []) for s in h.body)])


def student_names(sources: list[str], course_names: set[str] = frozenset()) -> dict[str, str]:
    """What each name the student's cells bind at their top level is (DATA, FUNCTION, CLASS, IMPORT, MIXED, MADE: see
    above), from their sources; a name the course's cells bind too is MIXED (it may be the course's object)."""
    texts = [t for t in (as_python(source) for source in sources) if t is not None]
    kinds: dict[str, str] = {}
    first: list[list[tuple[str, str]]] = []  # each cell's bindings in the first pass
    again: list[bool] = []  # whether a binding of the cell read a name's kind (then it is read again)
    for second in (False, True):  # the second pass reads each name's kind from the first (a name used before it is
        found: dict[str, set[str]] = {}  # bound); a cell whose bindings read no name is not parsed again
        for k, text in enumerate(texts):
            if second and not again[k]:
                bound = first[k]
            else:
                try:
                    tree = ast.parse(text)  # one cell's tree at a time in memory, never every cell's
                except (SyntaxError, RecursionError, MemoryError, ValueError):
                    tree = ast.Module(body=[], type_ignores=[])
                bound, reads_names = [], False
                for node in _statements(tree.body):
                    try:
                        bound += _bindings(node, kinds)
                    except (RecursionError, MemoryError):  # nested past Python's stack: whatever it binds is MADE
                        bound += [(n.id, MADE) for n in ast.walk(node) if isinstance(n, ast.Name)
                                  and isinstance(n.ctx, ast.Store)]
                    if not second and isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value \
                            is not None and any(isinstance(n, ast.Name) for n in ast.walk(node.value)):
                        reads_names = True
                del tree
                if not second:
                    first.append(bound)
                    again.append(reads_names)
            for name, kind in bound:
                found.setdefault(name, set()).add(kind)
        kinds = {name: _merge(k | ({MIXED} if name in course_names else set())) for name, k in found.items()}
    return kinds


def _bindings(node: ast.AST, kinds: dict[str, str]):
    """(name, kind) for each name statement `node` binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield node.name, FUNCTION
    elif isinstance(node, ast.ClassDef):
        yield node.name, CLASS
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name != "*":
                yield (alias.asname or alias.name).split(".")[0], IMPORT
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        kind = _value_kind(node.value, kinds) if node.value is not None else MADE
        for target in targets:
            if isinstance(target, ast.Name):
                yield target.id, kind
            else:  # unpacking: the items are whatever the value holds
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and target is not sub:
                        yield sub.id, MADE if isinstance(target, (ast.Tuple, ast.List, ast.Starred)) else MIXED
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):  # data += data stays data
        yield node.target.id, DATA if _data(node.value, kinds) else MADE
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.While)):
        targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else [
            i.optional_vars for i in getattr(node, "items", []) if i.optional_vars is not None]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    yield sub.id, MADE
        for statement in [*node.body, *node.orelse] if hasattr(node, "orelse") else node.body:
            yield from _bindings(statement, kinds)
    for sub in ast.walk(node) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)) else ():
        if isinstance(sub, ast.NamedExpr):
            yield sub.target.id, MADE


def _value_kind(node: ast.AST, kinds: dict[str, str]) -> str:
    """DATA for a display of values that run none of the student's code; FUNCTION for a lambda; a name's own kind;
    MIXED for a value read from something that is not theirs; MADE for anything else."""
    if isinstance(node, ast.Lambda):
        return FUNCTION
    if isinstance(node, ast.Name):
        return kinds.get(node.id, MIXED)
    if _data(node, kinds):
        return DATA
    if _readable(node, kinds):
        return MIXED
    return MADE


def _data(node: ast.AST, kinds: dict[str, str]) -> bool:
    """Is `node` a display built of constants (numbers, strings, and lists, tuples, sets, dicts of them, with
    operators): a value of the student's own that runs no code when it is made?"""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_data(e.value if isinstance(e, ast.Starred) else e, kinds) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all((k is None or _data(k, kinds)) and _data(v, kinds) for k, v in zip(node.keys, node.values))
    if isinstance(node, ast.BinOp):
        return _data(node.left, kinds) and _data(node.right, kinds)
    if isinstance(node, ast.UnaryOp):
        return _data(node.operand, kinds)
    if isinstance(node, ast.Name):
        return kinds.get(node.id) == DATA
    return False


def _readable(node: ast.AST, kinds: dict[str, str]) -> bool:
    """Can an own cell evaluate `node` without running the student's code? Constants, names (not MADE ones), a
    lambda (its body runs later, when an answer calls it), displays, operators, attributes and items of such values,
    f-strings. No call, comprehension or await: those run code."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return kinds.get(node.id) != MADE
    if isinstance(node, ast.Lambda):
        args = node.args
        return all(_readable(d, kinds) for d in [*args.defaults, *(d for d in args.kw_defaults if d is not None)])
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_readable(e, kinds) for e in node.elts)
    if isinstance(node, ast.Starred):
        return _readable(node.value, kinds)
    if isinstance(node, ast.Dict):
        return all((k is None or _readable(k, kinds)) and _readable(v, kinds) for k, v in zip(node.keys, node.values))
    if isinstance(node, ast.BinOp):
        return _readable(node.left, kinds) and _readable(node.right, kinds)
    if isinstance(node, ast.UnaryOp):
        return _readable(node.operand, kinds)
    if isinstance(node, ast.BoolOp):
        return all(_readable(v, kinds) for v in node.values)
    if isinstance(node, ast.Compare):
        return _readable(node.left, kinds) and all(_readable(c, kinds) for c in node.comparators)
    if isinstance(node, ast.IfExp):
        return all(_readable(n, kinds) for n in (node.test, node.body, node.orelse))
    if isinstance(node, ast.Attribute):
        return _readable(node.value, kinds)
    if isinstance(node, ast.Subscript):
        return _readable(node.value, kinds) and _readable(node.slice, kinds)
    if isinstance(node, ast.Slice):
        return all(n is None or _readable(n, kinds) for n in (node.lower, node.upper, node.step))
    if isinstance(node, ast.JoinedStr):
        return all(_readable(v, kinds) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _readable(node.value, kinds) and (node.format_spec is None or _readable(node.format_spec, kinds))
    return False


def _course_modules() -> set[str]:
    """The dotted names of lecture2's modules and packages (an own cell may not alias one), from its folder."""
    import importlib.util

    spec = importlib.util.find_spec("lecture2")
    if spec is None or not spec.submodule_search_locations:
        return {"lecture2"}
    from pathlib import Path

    root = Path(next(iter(spec.submodule_search_locations)))
    found = {"lecture2"}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if "__pycache__" in parts:
            continue
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        found.add(".".join(("lecture2", *parts)))
    return found


_COURSE_MODULES: set[str] | None = None


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _installed(module: str) -> bool:
    """Is `module` (its top-level package) one this environment has, not a file a cell could have written?"""
    import importlib.util
    import sys

    top = module.split(".")[0]
    if top in sys.builtin_module_names or top in sys.modules:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


@dataclass
class OwnCell:
    """What the own-cell rule says of one of a student's own cells."""

    runs: bool
    doing: str = ""  # for a cell that does not run: the first statement that is not a definition or a change of
    #                  the student's own objects, in words ("calls print", "loops: for"), or that nothing needs it
    touches: tuple[str, ...] = ()  # the names it binds or changes, and the objects whose methods it calls


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _first_call(node: ast.AST) -> str | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            return ast.unparse(sub.func)[:60]
    return None


class _Rule:
    """The own-cell rule over one cell's statements (see own_cell)."""

    def __init__(self, kinds: dict[str, str]):
        self.kinds = dict(kinds)
        self.touched: list[str] = []

    def touch(self, name: str | None) -> None:
        if name and name not in self.touched:
            self.touched.append(name)

    def value(self, node: ast.AST | None) -> str:
        """Why evaluating `node` is not allowed ("" when it is)."""
        if node is None or _readable(node, self.kinds):
            global _COURSE_MODULES
            dotted = _dotted(node) if node is not None else None
            if dotted is not None:
                if self.kinds.get(dotted.split(".")[0]) == IMPORT and "." not in dotted:
                    return f"给模块起了别名 (aliases the module {dotted})"
                if _COURSE_MODULES is None:
                    _COURSE_MODULES = _course_modules()
                if dotted in _COURSE_MODULES:
                    return f"给课程的模块起了别名 (aliases the course's module {dotted})"
            return ""
        called = _first_call(node)
        if called:
            return f"调用了 (calls) {called}"
        made = next((n.id for n in ast.walk(node) if isinstance(n, ast.Name) and self.kinds.get(n.id) == MADE), None)
        if made:
            return f"读取了调用得到的对象 (reads into {made}, an object made by a call)"
        return f"不只是定义 (does more than define things): {type(node).__name__.lower()}"

    def target(self, node: ast.AST) -> str:
        """Why storing into (or deleting) `node` is not allowed ("" when it is): a name; an item of their own data;
        an attribute of their own function or class; or unpacking into those."""
        if isinstance(node, (ast.Tuple, ast.List)):
            return next((w for w in (self.target(e) for e in node.elts) if w), "")
        if isinstance(node, ast.Starred):
            return self.target(node.value)
        self.touch(_root(node))
        if isinstance(node, ast.Name):
            return ""
        owner = node.value
        kind = self.kinds.get(owner.id) if isinstance(owner, ast.Name) else None
        if isinstance(node, ast.Subscript) and kind == DATA:
            return self.value(node.slice)
        if isinstance(node, ast.Attribute) and kind in (FUNCTION, CLASS):
            return ""
        return f"改了不是你创建的对象 (changes an object your cells did not create): {ast.unparse(node)[:60]}"

    def decorator(self, node: ast.AST) -> str:
        call = node if isinstance(node, ast.Call) else None
        dotted = _dotted(call.func if call else node)
        if dotted is None or dotted.split(".")[-1] not in DECORATORS:
            return f"用了会运行代码的装饰器 (a decorator that runs code): @{ast.unparse(node)[:60]}"
        if call:
            return next((w for w in (self.value(a) for a in [*call.args, *(k.value for k in call.keywords)]) if w), "")
        return ""

    def arguments(self, args: ast.arguments) -> str:
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        values = [*args.defaults, *(d for d in args.kw_defaults if d is not None),
                  *(a.annotation for a in every if a is not None and a.annotation is not None)]
        return next((w for w in (self.value(v) for v in values) if w), "")

    def definition(self, node: ast.AST) -> str:
        why = next((w for w in (self.decorator(d) for d in node.decorator_list) if w), "")
        if why:
            return why
        if isinstance(node, ast.ClassDef):
            if node.keywords:
                return f"class {node.name} 用了 `{node.keywords[0].arg}=` (a metaclass runs code)"
            why = next((w for w in (self.value(b) for b in node.bases) if w), "")
            return why or self.class_body(node)
        return self.arguments(node.args) or (self.value(node.returns) if node.returns is not None else "")

    def class_body(self, node: ast.ClassDef) -> str:
        """A class body runs when the class is made: definitions and constant attributes only."""
        outer = self.kinds
        self.kinds = dict(outer)
        try:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    if item.name in RUN_AT_DEFINITION:
                        return f"class {node.name} 定义了 {item.name} (runs code when classes are made)"
                    why = self.definition(item)
                    self.kinds[item.name] = CLASS if isinstance(item, ast.ClassDef) else FUNCTION
                elif isinstance(item, ast.Pass) or (isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)):
                    why = ""
                elif isinstance(item, (ast.Assign, ast.AnnAssign)) and all(
                        isinstance(t, ast.Name) for t in (item.targets if isinstance(item, ast.Assign) else [item.target])):
                    why = self.value(item.value) or (self.value(item.annotation) if isinstance(item, ast.AnnAssign) else "")
                    for t in item.targets if isinstance(item, ast.Assign) else [item.target]:
                        if t.id in RUN_AT_DEFINITION:
                            why = why or f"class {node.name} 定义了 {t.id} (runs code when classes are made)"
                        self.kinds[t.id] = _value_kind(item.value, self.kinds) if item.value is not None else MADE
                else:
                    why = f"class {node.name} 的类体不只是定义 (its body does more than define things): " \
                          f"{type(item).__name__.lower()}"
                if why:
                    return why
            return ""
        finally:
            self.kinds = outer

    def statements(self, statements) -> str:
        """Why the first statement that is not allowed is not ("" when all are)."""
        for node in statements:
            why = self.statement(node)
            if why:
                return why
        return ""

    def statement(self, node: ast.AST) -> str:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            if isinstance(node, ast.ImportFrom) and node.level:
                return "相对导入 (a relative import)"
            for alias in node.names:
                self.touch((alias.asname or alias.name).split(".")[0])
                self.kinds.setdefault((alias.asname or alias.name).split(".")[0], IMPORT)
                name = module or alias.name
                if not _installed(name):
                    return f"导入了环境里没有的模块 (imports {name[:60]}, which is not installed)"
            return ""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.touch(node.name)
            self.kinds.setdefault(node.name, CLASS if isinstance(node, ast.ClassDef) else FUNCTION)
            return self.definition(node)
        if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return ""
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            why = next((w for w in (self.target(t) for t in targets) if w), "")
            if not why and isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) \
                    and self.kinds.get(node.target.id) != DATA:
                why = f"改了不是你创建的数据 (changes {node.target.id}, which is not data your cells wrote)"
            why = why or self.value(node.value) or (
                self.value(node.annotation) if isinstance(node, ast.AnnAssign) else "")
            for target in targets if not why and not isinstance(node, ast.AugAssign) else ():
                if isinstance(target, ast.Name):  # the cell's own binding, where no other cell's is known
                    self.kinds.setdefault(target.id, _value_kind(node.value, self.kinds) if node.value else MADE)
            return why
        if isinstance(node, ast.Delete):
            return next((w for w in (self.target(t) for t in node.targets) if w), "")
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call, func = node.value, node.value.func
            owner = func.value if isinstance(func, ast.Attribute) else None
            if isinstance(owner, ast.Name) and self.kinds.get(owner.id) == DATA and not func.attr.startswith("_"):
                self.touch(owner.id)  # a method of their own list, dict or set: built-in code only
                return next((w for w in (self.value(a) for a in [*call.args, *(k.value for k in call.keywords)])
                             if w), "")
            return f"调用了 (calls) {ast.unparse(func)[:60]}"
        if isinstance(node, ast.If):
            return self.value(node.test) or self.statements(node.body) or self.statements(node.orelse)
        if isinstance(node, ast.Try):
            return (self.statements(node.body) or self.statements(node.orelse) or self.statements(node.finalbody)
                    or next((w for h in node.handlers for w in [self.value(h.type) if h.type else "",
                                                                  self.statements(h.body)] if w), ""))
        return f"不只是定义 (does more than define things): {type(node).__name__.lower()}"


def own_cell(source: str, kinds: dict[str, str]) -> OwnCell:
    """The rule for a student's own cell, which a student can predict: it may run when each statement only defines
    names from literals and the student's own functions and objects (imports of installed modules, def, class,
    assignments, `pass`, docstrings, and if/try blocks of these), or changes such objects (an item of their own
    list or dict, a method of it, `+=`, `del`; an attribute of their own function or class). Nothing in it may run
    code when it runs: no call (a decorator other than the library's usual ones, a default value, a class body
    included), no loop or comprehension, no alias of a course module, no attribute set on anything imported, nothing
    read out of an object a call made. `kinds`: student_names of their cells. Whether it runs also depends on
    whether anything needs it (kernel_plan)."""
    text = as_python(source)
    if text is None:
        return OwnCell(False, "不是合法的 Python (does not parse)")
    rule = _Rule(kinds)
    try:
        why = rule.statements(ast.parse(text).body)
    except (RecursionError, MemoryError):
        return OwnCell(False, "嵌套太深 (nested too deeply)")
    return OwnCell(not why, why, tuple(rule.touched))


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
