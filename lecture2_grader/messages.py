"""What the grader, the hub and the command lines say to students, in each edition's language: one keyed table.

Like lecture2.messages, each message once per language (lecture2.editions), held by tests/test_messages.py to both
languages with the same {fields}.

    say(key, lang, **fields)   MESSAGES[key] in `lang`, its {fields} filled in
    (the course's language for its instructors: lecture2_grader.intake.course_language, c.Lecture2Grader.language)
    student_language(path)     a student's language: the edition their notebook names (read from the file as
                               data, only ever one of the known editions; the course's language otherwise)

A student's messages (their feedback page, `make validate`, `make handin`, the hub's Validate button) follow their
notebook's edition; an instructor's (`make grade`, the class report, the command lines' refusals) the course's.
"""
from __future__ import annotations

import re
from pathlib import Path

from lecture2 import editions

MESSAGES: dict[str, dict[str, str]] = {
    # the release's stubs (nbgrader_config.py: ClearSolutions)
    "release.code_stub": {
        "zh": '# YOUR CODE HERE (在这里写你的代码)\nraise NotImplementedError("练习还没有完成 (not implemented yet)")',
        "en": '# YOUR CODE HERE\nraise NotImplementedError("exercise not implemented yet")'},
    "release.text_stub": {"zh": "在这里写你的答案 (YOUR ANSWER HERE)", "en": "YOUR ANSWER HERE"},
    # a test cell's status (the feedback page, make validate)
    "status.passed": {"zh": "通过 (passed)", "en": "passed"},
    "status.partial": {"zh": "部分通过 (partial)", "en": "partly passed"},
    "status.failed": {"zh": "没有通过 (failed)", "en": "failed"},
    "status.not implemented": {"zh": "还没有完成 (not implemented)", "en": "not implemented yet"},
    "status.timeout": {"zh": "超时 (timed out)", "en": "timed out"},
    "status.not run": {"zh": "没有运行 (not run)", "en": "not run"},
    "status.error": {"zh": "检查出错 (the check raised)", "en": "the check raised"},
    # the grader's lines under a test cell (lecture2_grader.feedback)
    "lines.share": {"zh": "{points}/{max_points} 分", "en": "{points}/{max_points} points"},
    "lines.points": {"zh": "{points}/{max_points} 分 (points)", "en": "{points}/{max_points} points"},
    "lines.visible_points": {"zh": "{points}/{visible} 分 (points) in the visible checks, of {max_points}",
                             "en": "{points}/{visible} points in the visible checks, of {max_points}"},
    "lines.hidden": {"zh": "隐藏检查 (hidden checks)", "en": "hidden checks"},
    "lines.expected": {"zh": "期望 (expected) {want}", "en": "expected {want}"},
    "lines.got": {"zh": "，得到 (got) {got}", "en": ", got {got}"},
    "lines.ratio": {"zh": "比值 ratio got/expected = {ratio}", "en": "ratio got/expected = {ratio}"},
    "lines.difference": {"zh": "差 difference = {difference}", "en": "difference = {difference}"},
    "lines.join": {"zh": "，", "en": ", "},
    "lines.hint": {"zh": "提示 (hint): {hint}", "en": "hint: {hint}"},
    # the feedback page
    "page.title": {"zh": "评分反馈 (feedback): {stem}", "en": "Feedback: {stem}"},
    "page.score": {"zh": "得分 (score)", "en": "Score"},
    "page.test_cell": {"zh": "检查 (test cell)", "en": "Test cell"},
    "page.points": {"zh": "分数 (points)", "en": "Points"},
    "page.status": {"zh": "结果 (status)", "en": "Status"},
    "page.problems": {"zh": "评分时发现 (found while grading):", "en": "Found while grading:"},
    "page.notices": {"zh": "评分怎样读你的 notebook (how the grader read your notebook):",
                     "en": "How the grader read your notebook:"},
    "page.cell_raised": {"zh": "你的答案单元格出错 (your answer cell raised): {ename}{where}",
                         "en": "Your answer cell raised: {ename}{where}"},
    "page.line": {"zh": " (第 {line} 行)", "en": " (line {line})"},
    # the class report and mistakes.csv (lecture2_grader.classreport): what a failed group shows without a hint
    "report.timeout": {"zh": "超时 (timeout): 检查在时间限制内没有结束", "en": "timeout: the check did not end within its time"},
    "report.not_run": {"zh": "没有运行 (not run): notebook 在这项检查之前就停了",
                       "en": "not run: the notebook stopped before this check"},
    "report.raised": {"zh": "答案抛出了异常 (the answer raised an exception)", "en": "the answer raised an exception"},
    "report.no_hint": {"zh": "没有匹配到常见错误 (no usual mistake matched)", "en": "no usual mistake matched"},
    # make handin (lecture2_grader.handin)
    "handin.validating": {"zh": "检查每个 notebook (validating each notebook) ...", "en": "validating each notebook ..."},
    "handin.save_again": {"zh": "{head} — 保存后再试一次 (save it from Jupyter again)",
                          "en": "{head} — save it from Jupyter again"},
    "handin.written": {"zh": "已写好 (written): {out} — {count} notebooks. 把这个 zip 交到课程网站 (upload this zip to the "
                             "LMS assignment)",
                       "en": "written: {out} — {count} notebooks. Upload this zip to the course's LMS assignment"},
    "handin.by_mail": {"zh": "; by e-mail or a shared folder: make handin STUDENT=your-id",
                       "en": "; by e-mail or a shared folder: make handin STUDENT=your-id"},
    "handin.bad_student": {"zh": "--student {student}: 只能用字母、数字和 _.@+- (use letters, digits and _.@+- only, e.g. "
                                 "your student number)",
                           "en": "--student {student}: use letters, digits and _.@+- only (e.g. your student number)"},
    "handin.no_notebooks": {"zh": "{folder} 里没有 notebook (no notebooks in {folder})", "en": "no notebooks in {folder}"},
    # the hub's Validate button (lecture2_hub.validate_button)
    "button.timeout": {"zh": "检查超时 (validation took more than {seconds} s)",
                       "en": "validation took more than {seconds} s"},
    # how the grader read a student's notebook (lecture2_grader.advice: make validate, the feedback page)
    "advice.and_more": {"zh": " 等 {count} 个 (and more)", "en": " and more ({count} in all)"},
    "advice.many_skipped": {"zh": "你自己的单元格中有 {count} 个评分时没有运行 (of your own cells, {count} were not run by the "
                                  "grader)；下面是前 {named} 个 (the first {named})。",
                            "en": "Of your own cells, {count} were not run by the grader; the first {named}:"},
    "advice.risk_unknown": {"zh": "如果你的答案依赖它的效果，相关检查会失分 (points at stake if your answers depend on it)",
                            "en": "points are at stake if your answers depend on what it does"},
    "advice.risk": {"zh": "你的答案读取了 (your answers read) {names}：如果它们依赖这个单元格的效果，相关检查会失分 (points at "
                          "stake)。把需要的定义移进答案单元格或只做定义的单元格 (move what they need into an answer cell or a "
                          "cell that only defines things)",
                    "en": "your answers read {names}: points are at stake if they depend on what this cell does. Move "
                          "what they need into an answer cell or a cell that only defines things"},
    "advice.harmless": {"zh": "你的答案没有读取它改动的名字，不影响分数 (harmless: your answers read nothing it touches)",
                        "en": "harmless: your answers read nothing it touches"},
    "advice.touches": {"zh": "；它改动的名字 (names it touches): {names}", "en": "; names it touches: {names}"},
    "advice.skipped": {"zh": "你自己的单元格 (your own cell) 「{first}」评分时没有运行 (not run by the grader)：{doing}{touches}。"
                             "{risk}。",
                       "en": "Your own cell \"{first}\" was not run by the grader: {doing}{touches}. {risk}."},
    "advice.test_cell": {"zh": "检查单元格 (test cell)", "en": "Test cell"},
    "advice.course_cell": {"zh": "课程单元格 (course cell)", "en": "Course cell"},
    "advice.test_ran": {"zh": "评分时运行的是课程的检查，你的修改不起作用 (the course's checks ran; your edit was ignored)",
                        "en": "the course's checks ran; your edit was ignored"},
    "advice.course_ran": {"zh": "评分时运行的是课程的版本，你的修改不起作用 (the course's version ran; your edit was ignored)",
                          "en": "the course's version ran; your edit was ignored"},
    "advice.yours_defines": {"zh": "你的版本定义了 (your version defines) {names}，课程的版本没有 (the course's does not)",
                             "en": "your version defines {names}, the course's does not"},
    "advice.ours_defines": {"zh": "课程的版本定义了 (the course's version defines) {names}，你的版本没有",
                            "en": "the course's version defines {names}, yours does not"},
    "advice.lines": {"zh": "改了 {count} 行 (lines changed)", "en": "{count} lines changed"},
    "advice.edited": {"zh": "{what} {gid}「{first}」被修改了 (was edited)：{ran}。{changes}。",
                      "en": "{what} {gid} \"{first}\" was edited: {ran}. {changes}."},
    "advice.join": {"zh": "；", "en": "; "},
    "advice.name_error": {"zh": "答案 {answer} 用到了 (uses) {name}：只有你改过的 {cell} 定义了它，评分时它不存在，会出现 "
                                "NameError (it is defined only by your edit of {cell}, which did not run)。",
                          "en": "Answer {answer} uses {name}: it is defined only by your edit of {cell}, which did not "
                                "run, so grading meets a NameError."},
    # make validate (lecture2_grader.validate)
    "validate.score": {"zh": "{stem}: {score}/{visible} 分 (points) in the visible checks, of {max_score} in all "
                             "(隐藏检查 hidden checks run when your instructor grades)",
                       "en": "{stem}: {score}/{visible} points in the visible checks, of {max_score} in all "
                             "(the hidden checks run when your instructor grades)"},
    "validate.not_ours": {"zh": "{name}: 不是这门课的 notebook (not a notebook of this assignment: no release notebook "
                                "of that name)",
                          "en": "{name}: not a notebook of this assignment (no release notebook of that name)"},
    "validate.no_file": {"zh": "{name}: 没有这个文件 (no such file)", "en": "{name}: no such file"},
    "validate.large": {
        "zh": "这个 notebook 有 {mb} MB，几乎都是保存下来的输出 (saved outputs: plots, logs)。评分只读取单元格的源代码 (cell "
              "sources)，输出不会被读取，也不影响分数 (harmless)；想让文件小一些，可以先 Edit > Clear Outputs of All Cells 再保存。",
        "en": "This notebook is {mb} MB, nearly all of it saved outputs (plots, logs). Grading reads only the cells' "
              "sources: the outputs are not read and change no points; to make the file smaller, use Edit > Clear "
              "Outputs of All Cells, then save."},
    # lecture2_grader.export: the LMS worksheet's comment (students read it), in the course's language
    "export.late": {"zh": "迟交 (late)", "en": "late"},
    "export.blank": {"zh": "未作答 (blank)", "en": "blank"},
    "export.missing": {"zh": "缺少 (missing)", "en": "missing"},
    "export.unreadable": {"zh": "无法读取 (unreadable)", "en": "unreadable"},
}

# The grader's own reasons built in Chinese with the English beside them (owncells.py: why an own cell is not run;
# plan.py: a cell nothing needs), as lecture2.messages' fragment catalogues: each Chinese string constant (an
# f-string's constant parts) of those modules is a key, its value the English that reads with the f-string's fields
# in their order (tests/test_messages.py holds every fragment to a key). `localize` applies them.
FRAGMENTS_EN: dict[str, str] = {
    # owncells.py
    "不只是定义 (does more than define things): ": "does more than define things: ",
    "改了不是你创建的对象 (changes an object your cells did not create): ": "changes an object your cells did not create: ",
    "不是合法的 Python (does not parse)": "does not parse as Python",
    "调用了 (calls) ": "calls ",
    "读取了调用得到的对象 (reads into ": "(reads into ",
    "用了会运行代码的装饰器 (a decorator that runs code): @": "a decorator that runs code: @",
    "相对导入 (a relative import)": "a relative import",
    "嵌套太深 (nested too deeply)": "nested too deeply",
    " 用了 `": " uses `",
    "改了不是你创建的数据 (changes ": "(changes ",
    "给模块起了别名 (aliases the module ": "(aliases the module ",
    "给课程的模块起了别名 (aliases the course's module ": "(aliases the course's module ",
    "导入了环境里没有的模块 (imports ": "(imports ",
    " 定义了 ": " defines ",
    " 的类体不只是定义 (its body does more than define things): ": "'s body does more than define things: ",
    # plan.py
    "没有答案用到它定义或改动的名字，评分时不需要它 (no answer reads a name it defines or changes: not needed)":
        "no answer reads a name it defines or changes: not needed",
}
FRAGMENT_MODULES = ("owncells.py", "plan.py")  # the modules whose fragments FRAGMENTS_EN holds


def say(key: str, lang: str, **fields: object) -> str:
    """Message `key` in `lang` (a KeyError names a key or language the catalogue lacks: a bug of the course)."""
    return MESSAGES[key][lang].format(**fields) if fields else MESSAGES[key][lang]


def localize(text: str, lang: str) -> str:
    """One of the grader's reasons (FRAGMENT_MODULES build them in Chinese) in `lang`: in English each fragment of
    FRAGMENTS_EN replaced, longest first; a reason that became one parenthesis ("(imports x, which is not
    installed)") reads without it. In Chinese, or for text without Chinese, as it is."""
    if lang == editions.SOURCE or not _CHINESE.search(text):
        return text
    for zh in sorted(FRAGMENTS_EN, key=len, reverse=True):
        text = text.replace(zh, FRAGMENTS_EN[zh])
    if text.startswith("(") and text.endswith(")") and text.count("(") == 1 and text.count(")") == 1:
        text = text[1:-1]
    return text


_CHINESE = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")


def student_language(path: Path, default: str = editions.SOURCE) -> str:
    """The language of the student notebook at `path`: its edition, read as data (`default` when it names none)."""
    return editions.of_file(path) or default
