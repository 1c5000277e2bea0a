"""Parts of the docs made from their one home: docs/grading.md's oracle table, docs/exercises.md's exercise table and
the README's short one (from the notebooks' metadata and the exercise modules' ORACLE dicts); the grader's layers in
lecture2_grader's docstring and docs/architecture.md (from tests/test_architecture.py's LAYERS, which that test holds
against the code, and each module's own docstring); docs/writing-checks.md's worked example (notebook 09's cells).

    .venv/bin/python -m tools.docs           rewrite the generated parts of docs/*.md in place
    .venv/bin/python -m tools.docs --check   exit 1 if any is stale (tests/test_docs.py runs this)

A generated part sits between `<!-- BEGIN GENERATED name -->` and `<!-- END GENERATED name -->`; everything
else in a page is written by hand.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions" / "lec02"


def exercises() -> list[dict]:
    """Every graded exercise, in notebook order: notebook, test cell grade_id, exercise name, points, groups."""
    sys.path.insert(0, str(ROOT))
    from lecture2_grader.score import exercise_groups

    rows = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if not meta.get("grade"):
                continue
            declared = exercise_groups(cell.source)
            total = sum(sum(g.values()) for g in declared.values())
            for name, groups in declared.items():
                share = meta["points"] * sum(groups.values()) / total if total else 0
                rows.append({"notebook": path.stem, "test": meta["grade_id"], "exercise": name, "points": share,
                             "groups": groups})
    return rows


def oracles() -> dict[str, object]:
    """exercise name -> its answers.Oracle, from every lecture2.exercises module."""
    import lecture2.exercises

    found = {}
    for info in pkgutil.iter_modules(lecture2.exercises.__path__):
        module = importlib.import_module(f"lecture2.exercises.{info.name}")
        found.update(getattr(module, "ORACLE", {}))
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def oracle_table() -> str:
    known = oracles()
    lines = ["| notebook | exercise | points | the student's process sends back | the expected value comes from | "
             "what a student who rewrites their own process could still do |", "|---|---|---|---|---|---|"]
    for row in exercises():
        o = known.get(row["exercise"])
        cells = [o.returns, o.expected, o.tampering] if o else ["(missing)"] * 3
        lines.append(f"| {row['notebook'][:2]} | `{row['exercise']}` | {row['points']:g} | "
                     + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def _title(path: Path) -> str:
    """The notebook's title, from its first heading ("# 01 · Tensor 与 dtype：..." -> "Tensor 与 dtype：...")."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown" and cell.source.startswith("#"):
            return cell.source.splitlines()[0].lstrip("#").split("·", 1)[-1].strip()
    return path.stem


def graded_cells() -> list[dict]:
    """Every graded test cell of solutions/, in order, from the notebooks' own nbgrader metadata and check groups:
    notebook, title, grade_id, points, and per exercise its groups (label, points, hidden)."""
    sys.path.insert(0, str(ROOT))
    from lecture2_grader.course import load
    from lecture2_grader.score import exercise_groups, group_lines

    cells = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        nb = load(path, ROOT / "notebooks" / "lec02" / path.name)
        title = _title(path)
        for cell in nb.tests:
            declared = exercise_groups(cell.source)
            lines = group_lines(cell.source)
            total = sum(sum(g.values()) for g in declared.values()) or 1
            exercises = []
            for name, groups in declared.items():
                exercises.append({"name": name, "groups": [
                    {"label": label, "points": cell.points * weight / total,
                     "hidden": bool(cell.hidden and label in lines and cell.hidden[0] <= lines[label] <= cell.hidden[1])}
                    for label, weight in groups.items()]})
            cells.append({"notebook": path.stem, "title": title, "grade_id": cell.grade_id, "points": cell.points,
                          "exercises": exercises})
    return cells


def exercise_table() -> str:
    """docs/exercises.md: every graded cell, its exercises and their check groups with points (hidden ones marked)."""
    cells = graded_cells()
    lines = ["| notebook | test cell (grade_id) | points | exercise | check groups: points (*hidden*: run only when graded) |",
             "|---|---|---|---|---|"]
    for cell in cells:
        for exercise in cell["exercises"]:
            groups = "; ".join((f"*{g['label']}* {g['points']:.3g} (hidden)" if g["hidden"] else f"{g['label']} {g['points']:.3g}")
                               for g in exercise["groups"])
            lines.append(f"| {cell['notebook'][:2]} {_cell(cell['title'])} | `{cell['grade_id']}` | {cell['points']:g} | "
                         f"`{exercise['name']}` | {_cell(groups)} |")
    lines.append(f"| | **{len(cells)} graded cells** | **{sum(c['points'] for c in cells):g}** | | |")
    return "\n".join(lines)


KINDS = ("derivation", "implementation", "bookkeeping")  # what an exercise asks of the student (issue 40)


def answer_cells() -> list[dict]:
    """Every exercise's answer cell of solutions/, in order: notebook, grade_id, and what it asks the student to work
    out (its metadata `lecture2.derives`, one line) and of which kind (`lecture2.kind`: KINDS)."""
    rows = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if not cell.metadata.get("nbgrader", {}).get("solution") or cell.cell_type != "code":
                continue
            ours = cell.metadata.get("lecture2", {})
            rows.append({"notebook": path.stem, "grade_id": cell.metadata["nbgrader"]["grade_id"],
                         "derives": ours.get("derives", ""), "kind": ours.get("kind", "")})
    return rows


def derivation_table() -> str:
    """docs/exercises.md: what each exercise asks the student to derive or build, and the share that does."""
    rows = answer_cells()
    lines = ["| notebook | answer cell | kind | what the student works out |", "|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['notebook'][:2]} | `{row['grade_id']}` | {row['kind'] or '(not stated)'} | "
                     f"{_cell(row['derives']) or '(not stated)'} |")
    deriving = sum(r["kind"] in ("derivation", "implementation") for r in rows)
    lines.append(f"| | **{len(rows)} exercises** | **{deriving} derive or build** "
                 f"({100 * deriving / len(rows) if rows else 0:.0f}%) | |")
    return "\n".join(lines)


def readme_exercises() -> str:
    """README's short table: one row per graded cell (its grade_id and points), the details in docs/exercises.md."""
    lines = ["| notebook | test cell | points | exercises |", "|---|---|---|---|"]
    for cell in graded_cells():
        names = ", ".join(f"`{e['name']}`" for e in cell["exercises"])
        lines.append(f"| {cell['notebook']} | `{cell['grade_id']}` | {cell['points']:g} | {_cell(names)} |")
    return "\n".join(lines)


GRADER = ROOT / "lecture2_grader"
SUMMARY_CHARACTERS = 160  # of a module's first sentence, its line in docs/architecture.md's table


def layers() -> list[tuple[str, set[str]]]:
    """tests/test_architecture.py's LAYERS, lowest first: (name, the package's top-level modules in it). Read as the
    literal it is (the test holds it against the code's imports)."""
    tree = ast.parse((ROOT / "tests" / "test_architecture.py").read_text(encoding="utf-8"))
    found = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "LAYERS" for t in node.targets))
    return ast.literal_eval(found)


def module_files(module: str) -> list[Path]:
    """The files of one top-level module of the grader: module.py, or every file of the folder module/."""
    if (GRADER / module).is_dir():
        return sorted(p for p in (GRADER / module).rglob("*.py") if "__pycache__" not in p.parts)
    return [GRADER / f"{module}.py"]


def summary(path: Path) -> str:
    """A module's first sentence (its docstring's), which says what it holds."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    match = re.match(r"(.+?(?<!e\.g)(?<!i\.e)\.)(\s|$)", paragraph)
    first = match.group(1) if match else paragraph.removesuffix(":") + "."
    if not first or len(first) > SUMMARY_CHARACTERS:
        raise SystemExit(f"error: {path.relative_to(ROOT)}: its docstring's first sentence says what the module holds "
                         f"in at most {SUMMARY_CHARACTERS} characters (docs/architecture.md lists it)")
    return first


def package_layers() -> str:
    """lecture2_grader's docstring: each layer, top first, and its modules (a folder's with a slash)."""
    lines = []
    for name, modules in reversed(layers()):
        shown = [f"{m}/" if (GRADER / m).is_dir() else m for m in sorted(modules)]
        lines.append(f"    {name:<28}{', '.join(shown)}")
    return "\n".join(lines)


def architecture_table() -> str:
    """docs/architecture.md: every module of the grader in its layer, top first, with its first sentence."""
    rows = ["| layer | module | what it holds |", "|---|---|---|"]
    for name, modules in reversed(layers()):
        for module in sorted(modules):
            for path in module_files(module):
                rows.append(f"| {name} | `{path.relative_to(GRADER).as_posix()}` | {_cell(summary(path))} |")
                name = ""
    return "\n".join(rows)


EXAMPLE = ("09_training_cost.ipynb", "ex09_inverse", "ex09_inverse_check")  # docs/writing-checks.md's


def worked_example() -> str:
    """docs/writing-checks.md's worked example: the answer cell and the test cell of EXAMPLE, as they are."""
    sys.path.insert(0, str(ROOT))
    from lecture2_grader.score import exercise_groups

    name, answer, test = EXAMPLE
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nbformat.read(SOLUTIONS / name, 4).cells}
    if answer not in cells or test not in cells:
        raise SystemExit(f"error: {name} has no cell {answer} or {test}: choose another worked example (EXAMPLE)")
    weights = [w for groups in exercise_groups(cells[test].source).values() for w in groups.values()]

    def block(source: str) -> str:
        return "   ```python\n" + "\n".join(f"   {line}".rstrip() for line in source.splitlines()) + "\n   ```"

    return (f"1. In `solutions/lec02/{name}`, the answer cell (grade_id `{answer}`):\n\n{block(cells[answer].source)}\n\n"
            f"   and its test cell (grade_id `{test}`, nbgrader points {cells[test].metadata['nbgrader']['points']:g} = "
            f"{' + '.join(f'{w:g}' for w in weights)}, its groups' weights):\n\n{block(cells[test].source)}")


GENERATED = {"docs/grading.md": {"oracle-table": oracle_table},
             "docs/exercises.md": {"exercise-table": exercise_table, "derivation-table": derivation_table},
             "README.md": {"exercise-table": readme_exercises},
             "lecture2_grader/__init__.py": {"layers": package_layers},
             "docs/architecture.md": {"layers": architecture_table},
             "docs/writing-checks.md": {"worked-example": worked_example}}


def render(text: str, parts: dict) -> str:
    for name, make in parts.items():
        pattern = re.compile(rf"(<!-- BEGIN GENERATED {name} -->).*?(<!-- END GENERATED {name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"error: no generated part {name!r} in the page")
        text = pattern.sub(lambda m: m.group(1) + "\n" + make() + "\n" + m.group(2), text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the generated parts are current")
    args = parser.parse_args(argv)
    stale = []
    for page, parts in GENERATED.items():
        path = ROOT / page
        old = path.read_text(encoding="utf-8")
        new = render(old, parts)
        if new != old:
            stale.append(page)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"stale: {', '.join(stale)} (run `.venv/bin/python -m tools.docs`)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
