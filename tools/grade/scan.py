"""Stage 2: the static scan of a student's answer cells, before any of their code runs.

An answer cell may hold, at its top level, only imports, function and class definitions and plain
assignments (and a docstring). Inside functions anything goes except the constructs that reach past the
student's own answers: frames and tracebacks, `gc`, IPython's hooks, tracing and profiling, dynamic
attribute access (`getattr`, `vars`, string formats that read attributes), dunder and private attributes,
assignments to attributes of modules and classes the cell did not define, rebinding the notebook's names,
reading names only a test cell defines, `global` of a name the cell does not own, threads, signals,
processes, files and databases, `ctypes`, and numeric subclasses or classes that override comparisons.

A finding withholds the exercise it belongs to: the answer is not run and earns nothing until the
instructor has looked at it (`make grade GRADE_ARGS="--allow STUDENT/GRADE_ID"`). Each finding names the
construct and its line in the answer cell, so the report line says what was found and where.

The scan is one layer: the sandbox (stage 3) confines whatever it misses, and the checks compare exact
built-in types. It errs on the side of flagging: an honest answer that trips it is run once the
instructor allows it.
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

# Modules an answer may import (top-level package name -> submodules refused, by prefix).
ALLOWED_MODULES: dict[str, tuple[str, ...]] = {
    "math": (), "cmath": (), "statistics": (), "time": (), "typing": (), "dataclasses": (),
    "collections": (), "functools": (), "itertools": (), "operator": (), "numbers": (), "fractions": (),
    "decimal": (), "random": (), "copy": (), "enum": (), "abc": (), "contextlib": (), "re": (), "string": (),
    "heapq": (), "bisect": (), "__future__": (),
    "numpy": ("numpy.ctypeslib", "numpy.lib.format", "numpy.distutils", "numpy.f2py", "numpy.testing"),
    "torch": ("torch._", "torch.utils.cpp_extension", "torch.utils._", "torch.hub", "torch.package",
              "torch.multiprocessing", "torch.library", "torch.overrides", "torch.testing", "torch.ops",
              "torch.fx.experimental", "torch.jit", "torch.compiler", "torch.utils.benchmark"),
    "lecture2": ("lecture2.checks", "lecture2.exercises", "lecture2._"),
}

# Builtins that reach past the answer: code from strings, namespaces, dynamic attributes, files, input, exit.
FORBIDDEN_NAMES = {
    "eval": "eval", "exec": "exec", "compile": "compile", "__import__": "__import__", "globals": "globals()",
    "locals": "locals()", "vars": "vars()", "getattr": "getattr", "setattr": "setattr", "delattr": "delattr",
    "open": "open (file access)", "input": "input", "breakpoint": "breakpoint", "exit": "exit", "quit": "quit",
    "get_ipython": "get_ipython (IPython's hooks)", "__builtins__": "__builtins__", "help": "help",
    "memoryview": "memoryview", "__loader__": "__loader__", "__spec__": "__spec__",
    # IPython's history and output caches hold the source of the cells that ran, hidden tests included
    "In": "In (IPython's input history)", "Out": "Out (IPython's output cache)", "_ih": "_ih", "_oh": "_oh",
    "_dh": "_dh", "_i": "_i", "_ii": "_ii", "_iii": "_iii", "_": "_ (the last output)", "__": "__", "___": "___",
}

# Attributes that reach frames, code, namespaces and hooks, whatever object they are read from.
FORBIDDEN_ATTRIBUTES = {
    # frames and tracebacks
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_lineno", "tb_frame", "tb_next",
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "_getframe",
    # string-named attribute access and formats that read attributes
    "attrgetter", "methodcaller", "format_map", "Formatter", "get_type_hints", "ForwardRef", "update_wrapper",
    "wraps",
    # files, processes, hooks and global state of torch and numpy
    "load", "save", "loadtxt", "savetxt", "fromfile", "tofile", "memmap", "load_library", "from_file",
    "register_module_forward_hook", "register_module_forward_pre_hook", "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook", "register_module_backward_hook", "register_module_buffer_registration_hook",
    "register_module_parameter_registration_hook", "register_module_module_registration_hook",
    "TorchFunctionMode", "TorchDispatchMode", "set_default_dtype", "set_default_device", "set_default_tensor_type",
    "set_flush_denormal", "settrace", "setprofile", "excepthook", "displayhook", "system", "popen", "spawn",
    "fork", "load_inline", "cpp_extension", "library", "ops", "classes",
    # modules that other modules carry as attributes (torch.sys, torch.os, lecture2.checks ...)
    "sys", "os", "subprocess", "builtins", "importlib", "ctypes", "gc", "inspect", "threading", "signal",
    "socket", "shutil", "pathlib", "pickle", "marshal", "multiprocessing", "traceback", "linecache", "checks",
    "exercises", "IPython", "sqlite3", "tempfile", "io", "code", "codeop", "runpy", "atexit", "faulthandler",
}
# Dunder attributes an answer may read: constructors (super().__init__) and names (type(x).__name__).
ALLOWED_DUNDERS = {"__init__", "__name__", "__qualname__", "__doc__"}
# Methods whose definition in an answer's class changes how a value compares, converts or is looked up.
FORBIDDEN_METHODS = {
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__float__", "__int__",
    "__index__", "__complex__", "__round__", "__trunc__", "__floor__", "__ceil__", "__abs__", "__instancecheck__",
    "__subclasscheck__", "__getattribute__", "__getattr__", "__del__", "__torch_function__", "__torch_dispatch__",
    "__array__", "__array_ufunc__", "__array_function__", "__init_subclass__", "__set_name__", "__class_getitem__",
    "__reduce__", "__reduce_ex__", "__set__", "__get__", "__delete__", "__missing__",
}
# Base classes an answer's class may not have: values that pass for numbers, strings or containers.
FORBIDDEN_BASES = {"int", "float", "complex", "bool", "str", "bytes", "tuple", "list", "dict", "set", "frozenset",
                   "Number", "Real", "Integral", "Complex", "Rational", "Tensor", "ndarray", "type", "ModuleType",
                   "Fraction", "Decimal", "dtype", "IntEnum", "IntFlag", "float64", "int64"}
_BUILTIN_NAMES = set(dir(builtins))


@dataclass(frozen=True)
class Finding:
    """One construct the scan refuses: which answer cell, which line (1-based, in that cell), what."""

    grade_id: str
    line: int
    construct: str

    def __str__(self) -> str:
        return f"{self.grade_id} line {self.line}: {self.construct}"


@dataclass
class Context:
    """What the instructor's notebook binds: names its own cells define (with the module each import
    binds) and names only its test cells define (hidden regions included)."""

    instructor_names: dict[str, str | None] = field(default_factory=dict)  # name -> module path if an import
    test_names: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def from_sources(cls, instructor_cells: list[str], test_cells: list[str]) -> "Context":
        ctx = cls()
        for source in instructor_cells:
            ctx.instructor_names.update(_top_level_bindings(source))
        for source in test_cells:
            ctx.test_names.update(_top_level_bindings(source))
        return ctx


def scan(answers: dict[str, str], context: Context) -> list[Finding]:
    """Every refused construct in the answer cells `answers` (grade_id -> source), in cell order."""
    answer_names: dict[str, str | None] = {}
    parsed = {}
    findings: list[Finding] = []
    for gid, source in answers.items():
        try:
            parsed[gid] = ast.parse(source)
        except SyntaxError:
            continue  # not a tampering construct: the run reports the SyntaxError where the student sees it
        except (ValueError, RecursionError) as err:  # null bytes, absurd nesting
            findings.append(Finding(gid, 1, f"unparsable source ({type(err).__name__})"))
            continue
        answer_names.update(_top_level_bindings(source, parsed[gid]))
    for gid, tree in parsed.items():
        findings += _Visitor(gid, context, answer_names).run(tree)
    return findings


def _module_of(node: ast.AST) -> list[tuple[str, str]]:
    """(bound name, module path) for an import statement."""
    out = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            out.append((alias.asname or alias.name.split(".")[0], alias.name if alias.asname else alias.name.split(".")[0]))
    elif isinstance(node, ast.ImportFrom):
        for alias in node.names:
            out.append((alias.asname or alias.name, f"{'.' * node.level}{node.module or ''}.{alias.name}"))
    return out


def _top_level_bindings(source: str, tree: ast.AST | None = None) -> dict[str, str | None]:
    """Names a cell binds in the notebook's namespace: name -> module path for imports, else None."""
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            return {}
    names: dict[str, str | None] = {}

    def targets(node):
        if isinstance(node, ast.Name):
            names[node.id] = None
        elif isinstance(node, (ast.Tuple, ast.List)):
            for elt in node.elts:
                targets(elt)
        elif isinstance(node, ast.Starred):
            targets(node.value)

    class Top(ast.NodeVisitor):  # top level and compound statements, not function or class bodies
        def visit_FunctionDef(self, node):
            names[node.name] = None

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ClassDef(self, node):
            names[node.name] = None

        def visit_Lambda(self, node):
            pass

        def visit_Import(self, node):
            names.update(_module_of(node))

        visit_ImportFrom = visit_Import

        def visit_Assign(self, node):
            for t in node.targets:
                targets(t)
            self.generic_visit(node)

        def visit_AnnAssign(self, node):
            targets(node.target)

        def visit_AugAssign(self, node):
            targets(node.target)

        def visit_For(self, node):
            targets(node.target)
            self.generic_visit(node)

        def visit_With(self, node):
            for item in node.items:
                if item.optional_vars is not None:
                    targets(item.optional_vars)
            self.generic_visit(node)

        def visit_ExceptHandler(self, node):
            if node.name:
                names[node.name] = None
            self.generic_visit(node)

        def visit_NamedExpr(self, node):
            targets(node.target)

        def visit_comprehension(self, node):
            pass  # comprehension variables are local to the comprehension

    Top().visit(tree)
    return names


class _Scope:
    def __init__(self, kind: str, names: set[str], module_aliases: set[str]):
        self.kind = kind  # "function" or "class"
        self.names = names
        self.module_aliases = module_aliases  # locals bound to a module or to an attribute of one


def _local_names(node: ast.AST) -> tuple[set[str], set[str]]:
    """Names bound inside a function body (not nested functions), and `global` names."""
    bound, declared_global = set(), set()
    args = node.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if a is not None:
            bound.add(a.arg)

    def walk(n):
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(child.name)
                for dec in child.decorator_list:
                    walk(dec)
                continue
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, ast.Global):
                declared_global.update(child.names)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                bound.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                bound.update(name for name, _ in _module_of(child))
            elif isinstance(child, ast.ExceptHandler) and child.name:
                bound.add(child.name)
            walk(child)

    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(stmt.name)
            for dec in stmt.decorator_list:
                walk(dec)
        else:
            walk(ast.Module(body=[stmt], type_ignores=[]))
    return bound - declared_global, declared_global


class _Visitor(ast.NodeVisitor):
    def __init__(self, gid: str, context: Context, answer_names: dict[str, str | None]):
        self.gid, self.context, self.answer_names = gid, context, answer_names
        self.findings: list[Finding] = []
        self.scopes: list[_Scope] = []
        self.module_names = {n for n, m in {**context.instructor_names, **answer_names}.items() if m is not None}

    def run(self, tree: ast.Module) -> list[Finding]:
        for stmt in tree.body:
            self._top_level(stmt)
            self.visit(stmt)
        return self.findings

    def flag(self, node: ast.AST, construct: str) -> None:
        self.findings.append(Finding(self.gid, getattr(node, "lineno", 1), construct))

    # -- the top level: imports, definitions, plain assignments ------------------------------------------
    def _top_level(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                             ast.Assign, ast.AnnAssign, ast.Pass)):
            pass
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            pass  # a docstring
        else:
            self.flag(stmt, f"top-level {type(stmt).__name__.lower()} statement (only imports, definitions and "
                            f"assignments may stand outside a function)")
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                for node in ast.walk(target):
                    if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
                        self.flag(stmt, "assignment to an attribute or item at the top level")
                        break
        for name, module in _top_level_bindings("", ast.Module(body=[stmt], type_ignores=[])).items():
            owner = self.context.instructor_names.get(name, "missing") if name in self.context.instructor_names \
                else self.context.test_names.get(name, "missing")
            if owner == "missing":
                continue
            if module is not None and owner is not None and _same_module(module, owner):
                continue  # `import math` again: the same module object
            where = "the notebook" if name in self.context.instructor_names else "a test cell"
            self.flag(stmt, f"rebinds `{name}`, which {where} defines")

    # -- definitions ---------------------------------------------------------------------------------
    def visit_FunctionDef(self, node):
        for dec in node.decorator_list:
            self.visit(dec)
        for default in [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
            self.visit(default)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation)
        if node.returns is not None:
            self.visit(node.returns)
        if self.scopes and self.scopes[-1].kind == "class" and node.name in FORBIDDEN_METHODS:
            self.flag(node, f"defines {node.name} (changes how a value compares, converts or is looked up)")
        bound, declared_global = _local_names(node)
        for name in sorted(declared_global):
            if name not in self.answer_names or name in self.context.instructor_names or name in self.context.test_names:
                self.flag(node, f"`global {name}`: rebinds a name the answer does not own")
        aliases = set()
        for stmt in ast.walk(node):  # locals that alias a module (m = math) or one of its attributes
            if isinstance(stmt, ast.Assign) and self._rooted_in_module(stmt.value):
                aliases |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                aliases |= {name for name, _ in _module_of(stmt)}
        self.scopes.append(_Scope("function", bound, aliases))
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        bound = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                                 node.args.vararg, node.args.kwarg] if a is not None}
        for default in node.args.defaults:
            self.visit(default)
        self.scopes.append(_Scope("function", bound, set()))
        self.visit(node.body)
        self.scopes.pop()

    def visit_ClassDef(self, node):
        for dec in node.decorator_list:
            self.visit(dec)
        for base in node.bases:
            name = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else None
            if name in FORBIDDEN_BASES:
                self.flag(node, f"class {node.name} subclasses {name} (a value that passes for a built-in type)")
            self.visit(base)
        for kw in node.keywords:
            self.flag(node, f"class {node.name} with keyword `{kw.arg}` (metaclass or class arguments)")
        self.scopes.append(_Scope("class", set(), set()))
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()

    # -- statements inside functions -----------------------------------------------------------------
    def visit_Global(self, node):
        if not self.scopes:
            self.flag(node, "`global` at the top level")

    def visit_Import(self, node):
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node):
        if node.level:
            self.flag(node, "relative import")
            return
        base = node.module or ""
        self._check_module(node, base)
        for alias in node.names:
            if alias.name == "*":
                self.flag(node, f"from {base} import *")
            else:
                self._check_module(node, f"{base}.{alias.name}", submodule_only=True)
                self._check_attribute_name(node, alias.name)

    def _check_module(self, node, module: str, submodule_only: bool = False) -> None:
        top = module.split(".")[0]
        if top not in ALLOWED_MODULES:
            if not submodule_only:
                self.flag(node, f"import of {module} (not a module answers may import)")
            return
        for refused in ALLOWED_MODULES[top]:
            if module == refused or module.startswith(refused if refused.endswith("_") else refused + "."):
                self.flag(node, f"import of {module}")
                return

    def visit_Assign(self, node):
        for target in node.targets:
            self._check_store(target)
        self.visit(node.value)

    def visit_AugAssign(self, node):
        self._check_store(node.target)
        self.visit(node.value)

    def visit_AnnAssign(self, node):
        self._check_store(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_Delete(self, node):
        for target in node.targets:
            self._check_store(target)

    def _check_store(self, target: ast.AST) -> None:
        """An attribute or item assignment may change only what the answer itself made."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._check_store(elt)
            return
        if isinstance(target, ast.Starred):
            self._check_store(target.value)
            return
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            root = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                if self._rooted_in_module(target.value) or self._is_global_not_owned(root.id):
                    what = "an attribute" if isinstance(target, ast.Attribute) else "an item"
                    self.flag(target, f"assignment to {what} of `{root.id}` (a module or an object the answer "
                                      f"did not make)")
            self.visit(target)
            return
        self.visit(target)

    def _rooted_in_module(self, node: ast.AST) -> bool:
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        if not isinstance(node, ast.Name):
            return False
        if any(node.id in s.module_aliases for s in self.scopes):
            return True
        return self._resolves_to_global(node.id) and node.id in self.module_names | {"builtins", "sys", "os"}

    def _resolves_to_global(self, name: str) -> bool:
        return not any(name in s.names for s in self.scopes if s.kind == "function")

    def _is_global_not_owned(self, name: str) -> bool:
        """A notebook name (not a local, not made by the answer): the tests' objects and modules."""
        if not self._resolves_to_global(name):
            return False
        if name in ("self", "cls"):
            return False
        owned = name in self.answer_names and self.answer_names[name] is None
        return not owned

    # -- expressions -----------------------------------------------------------------------------------
    def visit_Name(self, node):
        if node.id.startswith("_i") and node.id[2:].isdigit():
            self.flag(node, f"{node.id} (IPython's input history)")
            return
        if node.id in FORBIDDEN_NAMES and not (node.id == "_" and isinstance(node.ctx, ast.Store)):
            self.flag(node, FORBIDDEN_NAMES[node.id])
            return
        if isinstance(node.ctx, ast.Load) and self._resolves_to_global(node.id):
            test_only = node.id in self.context.test_names and node.id not in self.context.instructor_names \
                and node.id not in self.answer_names
            if test_only:
                self.flag(node, f"reads `{node.id}`, which only a test cell defines (define or import it in "
                                f"the answer)")

    def visit_Attribute(self, node):
        name = node.attr
        if name == "format" and not _plain_format_string(node.value):
            self.flag(node, ".format on a string that is not a plain literal (a format field can read attributes)")
        elif name.startswith("__") and name.endswith("__"):
            if name not in ALLOWED_DUNDERS:
                self.flag(node, f"dunder attribute .{name}")
        elif name in FORBIDDEN_ATTRIBUTES:
            self.flag(node, f"attribute .{name}")
        elif name.startswith("_"):
            base = node.value
            if not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                self.flag(node, f"private attribute .{name}")
        self.visit(node.value)

    def _check_attribute_name(self, node, name: str) -> None:
        if name in FORBIDDEN_ATTRIBUTES or name.startswith("_"):
            self.flag(node, f"import of the name {name}")

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "type" and len(node.args) == 3:
            self.flag(node, "type() with three arguments (a class made at run time)")
        self.generic_visit(node)

    def visit_JoinedStr(self, node):
        self.generic_visit(node)  # an f-string's fields are expressions: checked like any other

    def visit_Await(self, node):
        self.flag(node, "await")

    def visit_Yield(self, node):
        self.generic_visit(node)


def _same_module(a: str, b: str) -> bool:
    return a.lstrip(".") == b.lstrip(".")


def _plain_format_string(node: ast.AST) -> bool:
    """A string literal whose format fields read no attribute or item: "{:.2f} GB".format(x) is fine,
    "{0.__globals__}".format(f) is not."""
    import string
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(node.value) if f is not None]
    except ValueError:
        return False
    return not any("." in f or "[" in f for f in fields)
