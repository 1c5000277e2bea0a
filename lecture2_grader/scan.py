"""Stage 1b: a static scan of a student's answer cells, for the instructor's attention. It advises; it decides
nothing.

With nothing worth stealing in the student's process (see judge.py), no construct can raise a score: the
worst a student's code can do there is change the data it sends back about its own answer. The scan points
the instructor to the answers that try, so that a human can look: code that reaches frames, the garbage
collector, `ctypes` or /proc, rewrites modules it imported (lecture2's instruments, torch, math), reads names
dynamically, or defines classes that lie about comparisons or torch functions. Every answer runs and earns
what its checks give it; a finding only adds a line to the report and the class report. It never fails: a
cell it cannot read is one finding.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .source import as_python, unwrap_timing

DYNAMIC_NAMES = {"eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint", "get_ipython",
                 "__builtins__", "memoryview"}
REACHING_ATTRIBUTES = {
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame",
    "cr_frame", "ag_frame", "_getframe", "__globals__", "__closure__", "__code__", "__subclasses__", "__builtins__",
    "__mro__", "__bases__", "settrace", "setprofile", "get_objects", "get_referrers", "get_referents", "modules",
    "_current_frames", "__dict__", "__class__", "__module__",
}
WATCHED_MODULES = {"sys", "os", "gc", "inspect", "ctypes", "importlib", "builtins", "subprocess", "signal", "socket",
                   "pickle", "marshal", "multiprocessing", "threading", "_thread", "mmap", "resource", "pty",
                   "unittest", "traceback", "__main__", "lecture2_grader", "IPython", "code", "runpy", "atexit"}
WATCHED_LECTURE2 = ("lecture2.answers", "lecture2.wire", "lecture2.checks", "lecture2.exercises")
LYING_METHODS = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__float__", "__int__",
                 "__index__", "__hash__", "__torch_function__", "__torch_dispatch__", "__instancecheck__",
                 "__getattribute__", "__array__", "__array_function__", "__array_ufunc__", "__del__"}


@dataclass(frozen=True)
class Finding:
    """One construct worth a look: which answer cell, which line (1-based, in that cell), what."""

    grade_id: str
    line: int
    construct: str

    def __str__(self) -> str:
        return f"{self.grade_id} line {self.line}: {self.construct}"


def scan(answers: dict[str, str]) -> list[Finding]:
    """Findings in the answer cells `answers` (grade_id -> source), in cell order, at most 20 per cell."""
    findings: list[Finding] = []
    for gid, source in answers.items():
        try:
            findings += _scan_cell(gid, source)[:20]
        except (RecursionError, MemoryError, ValueError):
            findings.append(Finding(gid, 1, "could not be scanned (nested too deeply)"))
    return findings


def _scan_cell(gid: str, source: str) -> list[Finding]:
    text = as_python(source)
    try:
        tree = ast.parse(text if text is not None else unwrap_timing(source))
    except SyntaxError as err:
        return [Finding(gid, err.lineno or 1, "does not parse as Python")]
    found: dict[Finding, None] = {}  # in the order found, each once (a set: a cell of 15,000 flagged lines is linear)
    modules: set[str] = {"torch", "math", "numpy", "np", "lecture2", "nn", "F", "statistics", "time", "random"}

    def flag(node: ast.AST, what: str) -> None:
        found.setdefault(Finding(gid, getattr(node, "lineno", 1), what))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for alias in node.names:
                modules.add((alias.asname or alias.name).split(".")[0])
            for name in names:
                if name.split(".")[0] in WATCHED_MODULES or name.startswith(WATCHED_LECTURE2):
                    flag(node, f"imports {name}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("unittest", "ctypes", "gc"):
                flag(node, f"imports from {node.module}")
        elif isinstance(node, ast.Name) and node.id in DYNAMIC_NAMES:
            flag(node, f"uses {node.id} (reads or runs code by name)")
        elif isinstance(node, ast.Attribute) and node.attr in REACHING_ATTRIBUTES:
            flag(node, f"reads .{node.attr} (frames, namespaces or the interpreter's internals)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            flag(node, f"calls {node.func.id} (changes an object by name)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
            flag(node, "calls getattr with a computed name")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(("/proc", "/dev/", "/sys")):
            flag(node, f"names the path {node.value[:40]!r}")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                names = [item.name] if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else [
                    t.id for t in getattr(item, "targets", [getattr(item, "target", None)]) if isinstance(t, ast.Name)]
                for name in names:
                    if name in LYING_METHODS:
                        flag(item, f"class {node.name} defines {name} (how its values compare, convert or meet torch)")
            for kw in node.keywords:
                flag(node, f"class {node.name} with `{kw.arg}=` (a metaclass)")
    for node in ast.walk(tree):  # stores into a module's attributes: patching what the checks' instruments use
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                    root = sub.value
                    while isinstance(root, (ast.Attribute, ast.Subscript)):
                        root = root.value
                    if isinstance(root, ast.Name) and root.id in modules:
                        flag(sub, f"assigns to {root.id}.{sub.attr} (changes a module)")
    return sorted(found, key=lambda f: f.line)
