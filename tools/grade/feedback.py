"""Stage 5: feedback a student may read, made from trusted data only.

The page shows the notebook as the student received it (the release: prose, demo code, the visible part of
each test cell), their own answer cells, and under each test cell one line written by the grader: the
points, and for a failure the check's label, expected value and hint. It never shows a hidden test's
source, a hidden input or seed, a traceback, or anything the student's code printed or returned (a value
their code made could carry what a hidden test passed to it): for a failure in a hidden check it shows
only that a hidden check failed and, if the hint is one of the course's fixed hints, the hint.
"""
from __future__ import annotations

import threading
from pathlib import Path

import nbformat

from .score import NotebookResult, TestResult, exercise_names
from .splice import Notebook

_local = threading.local()


def _known_hints() -> set[str]:
    from lecture2 import checks  # the grader's own copy: instructor code
    return set(checks.HINTS.values())


def group_line(group: dict, known_hints: set[str]) -> str:
    """One check group's line: its points, and for a failure what a student may see of it."""
    share = f"{group['points']:.3g}/{group['max_points']:.3g} 分"
    if group["passed"]:
        return f"  ✅ {group['group']}: {share}"
    line = f"  ❌ {group['group']}: {share}"
    hint = group.get("hint")
    if group.get("hidden"):
        line += " — 隐藏检查 (hidden checks)"
        if hint and hint in known_hints:
            line += f"\n     提示 (hint): {hint}"
        return line
    if group.get("what"):
        line += f" — {group['what']}: 期望 (expected) {group.get('want')}"
    elif group.get("message") == "not run":
        line += " — 没有运行 (not run)"
    if hint:
        line += f"\n     提示 (hint): {hint}"
    return line


def result_line(result: TestResult, exercise: str, answer_errors: list[str]) -> str:
    """The grader's line under a test cell."""
    points = f"{result.points:g}/{result.max_points:g} 分 (points)"
    if result.visible_max is not None and result.visible_max < result.max_points:  # make validate: visible groups
        points = f"{result.points:g}/{result.visible_max:g} 分 (points) in the visible checks, of {result.max_points:g}"
    f = result.failure
    if result.groups and result.status != "withheld":
        shown = [g for g in result.groups if g.get("present", True)]
        mark = "✅" if all(g["passed"] for g in shown) else "◐" if any(g["passed"] for g in shown) else "❌"
        if result.status == "timeout":
            mark = "⏱"
        known = _known_hints()
        return "\n".join([f"{mark} {exercise}: {points}", *(group_line(g, known) for g in shown)])
    if result.status == "passed":
        return f"✅ {exercise}: 通过 (passed) — {points}"
    if result.status == "withheld":
        return (f"⚠️ {exercise}: {points} — 暂不计分，等老师审阅 (withheld for the instructor's review): "
                f"{result.reason}")
    if result.status == "not run":
        return f"⏹ {exercise}: {points} — 没有运行 (not run): 这个 notebook 在更早的单元格停止了。"
    if result.status == "stopped":
        return f"⏹ {exercise}: {points} — 运行中止 (stopped): 超过时间限制或 kernel 崩溃 (see the report)。"
    if result.status == "timeout":
        return f"⏱ {exercise}: {points} — 超时 (timed out)。"
    lines = [f"❌ {exercise}: {points}"]
    if "没有完成" in str(f.get("message", "")) or "not implemented" in str(f.get("message", "")):
        lines[0] += " — 还没有完成 (not implemented)。"
        return "\n".join(lines)
    hint = f.get("hint") if isinstance(f.get("hint"), str) else None
    if result.in_hidden:
        lines.append("一个隐藏检查 (hidden check) 没有通过：你的函数对可见检查之外的输入给出了错误的结果 (or raised).")
        if hint and hint in _known_hints():
            lines.append(f"提示 (hint): {hint}")
    else:
        what = f.get("what") if isinstance(f.get("what"), str) else None
        if what:
            lines.append(f"{what}: 期望 (expected) {f.get('want')}")
        else:
            line = f.get("line")
            lines.append(f"可见检查 (visible check) 失败: {f.get('ename')}" + (f" (第 {line} 行)" if line else "")
                         + "。在你的 notebook 里运行这个检查单元格可以看到完整信息。")
        if hint:
            lines.append(f"提示 (hint): {hint}")
    lines += answer_errors
    return "\n".join(lines)


def notebook(nb: Notebook, release_path: Path, result: NotebookResult, answers: dict[str, str],
             answer_ends: dict[str, dict], header: list[str]) -> nbformat.NotebookNode:
    """The feedback notebook: the release with the student's answers and the grader's result lines."""
    release = nbformat.read(release_path, as_version=4)
    by_gid = {t.grade_id: t for t in result.tests}
    for cell in release.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
            end = answer_ends.get(gid)
            if end and end.get("status") != "ok":
                message = f"你的答案单元格出错 (your answer cell raised): {end.get('ename')}"
                if end.get("line"):
                    message += f" (第 {end['line']} 行)"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=message + "\n")]
        elif gid in by_gid:
            exercise = ", ".join(sorted(exercise_names(nb.cell(gid).source))) or gid
            text = result_line(by_gid[gid], exercise, [])
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]
    total = f"**{result.score:g} / {nb.max_score:g}**"
    lines = [f"# 评分反馈 (feedback): {nb.stem}", "", f"得分 (score): {total}", ""]
    lines += ["| 检查 (test cell) | 分数 (points) | 结果 (status) |", "|---|---|---|"]
    for t in result.tests:
        lines.append(f"| `{t.grade_id}` | {t.points:g} / {t.max_points:g} | {t.status} |")
    if header:
        lines += ["", "评分时发现 (found while grading):", *[f"- {_md_escape(h)}" for h in header]]
    release.cells.insert(0, nbformat.v4.new_markdown_cell("\n".join(lines)))
    return release


def _md_escape(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("`", "'")


def write_html(feedback_nb: nbformat.NotebookNode, path: Path) -> None:
    """Render with nbconvert (one exporter per thread: its templates load once)."""
    exporter = getattr(_local, "exporter", None)
    if exporter is None:
        from nbconvert import HTMLExporter

        exporter = HTMLExporter()
        _local.exporter = exporter
    body, _ = exporter.from_notebook_node(feedback_nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
