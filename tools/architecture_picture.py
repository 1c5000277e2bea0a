"""docs/architecture-after.png: the grader's layers as a building, drawn from their one home.

    .venv/bin/python -m tools.architecture_picture            redraw it (after a module is added, moved or grows)

Each floor is a layer of tests/test_architecture.py's LAYERS (the ground at the bottom), each room a module of it: a
file, or a folder's files side by side, its width its lines. A module imports only from its own floor and the floors
below (the test holds that against the code), so no arrow is drawn: every one points down. The student's process
(judging/kernel.py) is shaded: it imports nothing of the grader.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from tools.docs import GRADER, ROOT, layers, module_files  # noqa: E402

OUT = ROOT / "docs" / "architecture-after.png"
APART = "judging/kernel.py"
CHARACTER = 0.0048  # of the drawing's width, one character of a room's name at 8 points


def rooms() -> list[tuple[str, list[tuple[str, list[tuple[str, int]]]]]]:
    """Each layer, top first: (its name, [(a module, [(a file's path inside the package, its lines), ...]), ...])."""
    return [(name, [(module, [(p.relative_to(GRADER).as_posix(), len(p.read_text(encoding="utf-8").splitlines()))
                              for p in module_files(module)]) for module in sorted(modules)])
            for name, modules in reversed(layers())]


def _room(ax, x: float, y: float, w: float, path: str, lines: int) -> None:
    """One file: a box `w` wide, named inside it (across, or up where it is narrow)."""
    ax.add_patch(Rectangle((x, y + 0.12), w, 0.76, facecolor="#e8c9c9" if path == APART else "#c9d6e8",
                           edgecolor="#33475b", linewidth=0.6))
    name = path.removesuffix(".py").rsplit("/", 1)[-1]
    across = len(name) * CHARACTER < w
    ax.text(x + w / 2, y + 0.5, f"{name}\n{lines}" if across or w > 2.2 * CHARACTER else name, ha="center",
            va="center", rotation=0 if across else 90, fontsize=8 if across or w > 2.2 * CHARACTER else 6)


def draw(out: Path = OUT) -> Path:
    floors = rooms()
    fig, ax = plt.subplots(figsize=(18, 1.6 * len(floors) + 1))
    widest = max(sum(lines for _, files in modules for _, lines in files) for _, modules in floors)
    for row, (name, modules) in enumerate(floors):
        y = len(floors) - 1 - row
        ax.text(-0.01, y + 0.5, name, ha="right", va="center", fontsize=11, fontweight="bold")
        x = 0.0
        for module, files in modules:
            start = x
            for path, lines in files:
                _room(ax, x, y, lines / widest, path, lines)
                x += lines / widest
            if (GRADER / module).is_dir():  # a folder: its files in one frame
                ax.add_patch(Rectangle((start, y + 0.04), x - start, 0.92, fill=False, edgecolor="#1b2a38", linewidth=1.6))
                ax.text((start + x) / 2, y + 0.06, f"{module}/", ha="center", va="bottom", fontsize=8, fontweight="bold")
        total = sum(lines for _, files in modules for _, lines in files)
        ax.text(x + 0.005, y + 0.5, f"{total} lines", ha="left", va="center", fontsize=8, color="#555555")
    ax.set_xlim(-0.17, 1.07)
    ax.set_ylim(-0.1, len(floors))
    ax.axis("off")
    ax.set_title("lecture2_grader by layer (tests/test_architecture.py): a room is a file, its width its lines; a "
                 "module imports only from its own floor and those below; judging/kernel.py (red) from none",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.architecture_picture", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    print(draw(parser.parse_args(argv).out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
