"""What the grader tells a student about how it read their notebook: own cells it did not run, course cells edited.
In validate and the feedback page, in the notebook's edition's language (lecture2_grader.messages; an own cell's
reason, owncells.OwnCell.doing, through its localize): their own cells it did not run and what that risks, and course cells they edited, whose course version ran instead. Advice only: it comes from the notebook's sources, before anything runs, and it never
changes a score. Every student text it quotes is escaped where it is shown (text.py)."""
from __future__ import annotations

from collections import Counter

from lecture2.editions import SOURCE

from . import plan
from .course import Notebook, top_level_names
from .messages import localize, say
from .submission import Answers

FIRST_LINE = 80  # characters of a cell's first line quoted to name it
NAMED = 20  # own cells not run that are named one by one (then how many in all)


def first_line(source: str) -> str:
    line = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= FIRST_LINE else line[:FIRST_LINE] + "…"


def _listed(names, lang: str = SOURCE) -> str:
    names = sorted(names)
    more = say("advice.and_more", lang, count=len(names)) if len(names) > 8 else ""
    return ", ".join(names[:8]) + more


def skipped_own_cells(answers: Answers, kernel: plan.KernelPlan, lang: str = SOURCE) -> list[str]:
    """One notice per own cell the grader does not run (owncells.own_cell): which, why, and whether points are at
    stake; in `lang` (the notebook's edition)."""
    read = kernel.read
    notes = []
    if len(kernel.skipped_own) > NAMED:
        notes.append(say("advice.many_skipped", lang, count=len(kernel.skipped_own), named=NAMED))
    for cell, verdict in kernel.skipped_own[:NAMED]:
        touched = set(verdict.touches)
        at_stake = None if read is None else touched & read
        if at_stake is None:
            risk = say("advice.risk_unknown", lang)
        elif at_stake:
            risk = say("advice.risk", lang, names=_listed(at_stake, lang))
        else:
            risk = say("advice.harmless", lang)
        touches = say("advice.touches", lang, names=_listed(touched, lang)) if touched else ""
        notes.append(say("advice.skipped", lang, first=first_line(cell.source), doing=localize(verdict.doing, lang), touches=touches,
                         risk=risk))
    return notes


def changed_lines(course: str, theirs: str) -> int:
    """How many lines an edit changed (at least 1): the larger of the lines only one side has, counted as multisets.
    Linear in the cells (difflib's ndiff compares every pair of differing lines: minutes for a cell of 100,000
    characters)."""
    ours, mine = Counter(course.strip().splitlines()), Counter(theirs.strip().splitlines())
    return max(1, sum((ours - mine).values()), sum((mine - ours).values()))


def edited_course_cells(nb: Notebook, answers: Answers) -> list[str]:
    """One notice per course cell the student changed: the course's version ran; what the edit changed, in names;
    in the notebook's edition's language."""
    lang = nb.edition
    notes = []
    only_theirs: dict[str, str] = {}  # a name only a student's edit defines -> the cell
    for gid, theirs in answers.edited.items():
        cell = nb.cell(gid)
        course = cell.visible
        mine, ours = set(top_level_names(theirs)), set(top_level_names(course))
        what = say("advice.test_cell" if cell.kind == "test" else "advice.course_cell", lang)
        ran = say("advice.test_ran" if cell.kind == "test" else "advice.course_ran", lang)
        changes = []
        if mine - ours:
            changes.append(say("advice.yours_defines", lang, names=_listed(mine - ours, lang)))
        if ours - mine:
            changes.append(say("advice.ours_defines", lang, names=_listed(ours - mine, lang)))
        if not changes:
            changes.append(say("advice.lines", lang, count=changed_lines(course, theirs)))
        for name in mine - ours:
            only_theirs[name] = gid
        notes.append(say("advice.edited", lang, what=what, gid=gid, first=first_line(course), ran=ran,
                         changes=say("advice.join", lang).join(changes)))
    for answer, source in answers.sources.items():
        missing = (plan.reads(source) or set()) & set(only_theirs)
        for name in sorted(missing):
            notes.append(say("advice.name_error", lang, answer=answer, name=name, cell=only_theirs[name]))
    return notes
