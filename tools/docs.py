"""Tables of the docs made from their one home (the notebooks' metadata, the exercise modules' ORACLE dicts).

    .venv/bin/python -m tools.docs           rewrite the generated parts of docs/*.md in place
    .venv/bin/python -m tools.docs --check   exit 1 if any is stale (tests/test_docs.py runs this)

A generated part sits between `<!-- BEGIN GENERATED name -->` and `<!-- END GENERATED name -->`; everything
else in a page is written by hand.
"""
from __future__ import annotations

import argparse
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


GENERATED = {"docs/grading.md": {"oracle-table": oracle_table}}


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
