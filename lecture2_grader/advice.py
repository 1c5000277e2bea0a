"""What the grader tells a student about how it read their notebook: own cells it did not run, course cells edited.
In validate and the feedback page, in Chinese with the English terms: their own cells it did not run and what
that risks, and course cells they edited, whose course version ran instead. Advice only: it comes from the notebook's sources, before anything runs, and it never
changes a score. Every student text it quotes is escaped where it is shown (text.py)."""
from __future__ import annotations

from collections import Counter

from . import plan
from .course import Notebook, top_level_names
from .submission import Answers

FIRST_LINE = 80  # characters of a cell's first line quoted to name it
NAMED = 20  # own cells not run that are named one by one (then how many in all)


def first_line(source: str) -> str:
    line = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= FIRST_LINE else line[:FIRST_LINE] + "…"


def _listed(names) -> str:
    names = sorted(names)
    return ", ".join(names[:8]) + (f" 等 {len(names)} 个 (and more)" if len(names) > 8 else "")


def skipped_own_cells(answers: Answers, kernel: plan.KernelPlan) -> list[str]:
    """One notice per own cell the grader does not run (owncells.own_cell): which, why, and whether points are at stake."""
    read = kernel.read
    notes = []
    if len(kernel.skipped_own) > NAMED:
        notes.append(f"你自己的单元格中有 {len(kernel.skipped_own)} 个评分时没有运行 (of your own cells, "
                     f"{len(kernel.skipped_own)} were not run by the grader)；下面是前 {NAMED} 个 (the first {NAMED})。")
    for cell, verdict in kernel.skipped_own[:NAMED]:
        touched = set(verdict.touches)
        at_stake = None if read is None else touched & read
        if at_stake is None:
            risk = "如果你的答案依赖它的效果，相关检查会失分 (points at stake if your answers depend on it)"
        elif at_stake:
            risk = (f"你的答案读取了 (your answers read) {_listed(at_stake)}：如果它们依赖这个单元格的效果，相关检查会失分 "
                    "(points at stake)。把需要的定义移进答案单元格或只做定义的单元格 (move what they need into an "
                    "answer cell or a cell that only defines things)")
        else:
            risk = "你的答案没有读取它改动的名字，不影响分数 (harmless: your answers read nothing it touches)"
        touches = f"；它改动的名字 (names it touches): {_listed(touched)}" if touched else ""
        notes.append(f"你自己的单元格 (your own cell) 「{first_line(cell.source)}」评分时没有运行 (not run by the grader)："
                     f"{verdict.doing}{touches}。{risk}。")
    return notes


def changed_lines(course: str, theirs: str) -> int:
    """How many lines an edit changed (at least 1): the larger of the lines only one side has, counted as multisets.
    Linear in the cells (difflib's ndiff compares every pair of differing lines: minutes for a cell of 100,000
    characters)."""
    ours, mine = Counter(course.strip().splitlines()), Counter(theirs.strip().splitlines())
    return max(1, sum((ours - mine).values()), sum((mine - ours).values()))


def edited_course_cells(nb: Notebook, answers: Answers) -> list[str]:
    """One notice per course cell the student changed: the course's version ran; what the edit changed, in names."""
    notes = []
    only_theirs: dict[str, str] = {}  # a name only a student's edit defines -> the cell
    for gid, theirs in answers.edited.items():
        cell = nb.cell(gid)
        course = cell.visible
        mine, ours = set(top_level_names(theirs)), set(top_level_names(course))
        what = "检查单元格 (test cell)" if cell.kind == "test" else "课程单元格 (course cell)"
        ran = ("评分时运行的是课程的检查，你的修改不起作用 (the course's checks ran; your edit was ignored)" if cell.kind == "test"
               else "评分时运行的是课程的版本，你的修改不起作用 (the course's version ran; your edit was ignored)")
        changes = []
        if mine - ours:
            changes.append(f"你的版本定义了 (your version defines) {_listed(mine - ours)}，课程的版本没有 (the course's does not)")
        if ours - mine:
            changes.append(f"课程的版本定义了 (the course's version defines) {_listed(ours - mine)}，你的版本没有")
        if not changes:
            changes.append(f"改了 {changed_lines(course, theirs)} 行 (lines changed)")
        for name in mine - ours:
            only_theirs[name] = gid
        notes.append(f"{what} {gid}「{first_line(course)}」被修改了 (was edited)：{ran}。{'；'.join(changes)}。")
    for answer, source in answers.sources.items():
        missing = (plan.reads(source) or set()) & set(only_theirs)
        for name in sorted(missing):
            notes.append(f"答案 {answer} 用到了 (uses) {name}：只有你改过的 {only_theirs[name]} 定义了它，评分时它不存在，"
                         f"会出现 NameError (it is defined only by your edit of {only_theirs[name]}, which did not run)。")
    return notes
