"""The own-cell rule: which of a student's own cells may run in the student's process (plan.py asks it).

A student's own cell runs when it only defines names from literals and the student's own functions and objects, or
changes such objects, and nothing in it runs code when it runs (`own_cell` says exactly what is allowed); whether
it then runs also depends on whether an answer needs it (plan.kernel_plan). To judge a cell, the rule knows what
each of the student's names is, as far as their cells' sources say (`student_names`: data, a function or class of
theirs, an import, or something a call made). Nothing here runs a student's code: sources are parsed, never run.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .source import as_python

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
