"""What the grader, the hub and the command lines say, in each edition's language (lecture2.editions): one keyed
table like lecture2.messages, each message once per language, held by tests/test_messages.py to both languages
with the same {fields}.

    say(key, lang, **fields)   MESSAGES[key] in `lang`, its {fields} filled in
    course_language(course)    the course's language for its instructors (c.Lecture2Grader.language in
                               nbgrader_config.py; default: the source's, Chinese)
    student_language(path)     a student's language: the edition their notebook names (read from the file as
                               data, only ever one of the known editions; the course's language otherwise)

A student's messages (their feedback page, `make validate`, `make handin`, the hub's Validate button) follow their
notebook's edition; an instructor's (`make grade`, the class report, the command lines' refusals) the course's.
"""
from __future__ import annotations

from pathlib import Path

from lecture2 import editions

MESSAGES: dict[str, dict[str, str]] = {
    # the release's stubs (nbgrader_config.py: ClearSolutions)
    "release.code_stub": {
        "zh": '# YOUR CODE HERE (在这里写你的代码)\nraise NotImplementedError("练习还没有完成 (not implemented yet)")',
        "en": '# YOUR CODE HERE\nraise NotImplementedError("exercise not implemented yet")'},
    "release.text_stub": {"zh": "在这里写你的答案 (YOUR ANSWER HERE)", "en": "YOUR ANSWER HERE"},
}


def say(key: str, lang: str, **fields: object) -> str:
    """Message `key` in `lang` (a KeyError names a key or language the catalogue lacks: a bug of the course)."""
    return MESSAGES[key][lang].format(**fields) if fields else MESSAGES[key][lang]


def course_language(course: Path | None = None) -> str:
    """The course's language (c.Lecture2Grader.language in course/nbgrader_config.py), one of the editions."""
    if course is None:
        return editions.SOURCE
    try:
        from .intake import read_settings

        language = read_settings(course).get("language")
    except (OSError, SystemExit, ValueError):
        return editions.SOURCE
    return language if language in editions.EDITIONS else editions.SOURCE


def student_language(path: Path, default: str = editions.SOURCE) -> str:
    """The language of the student notebook at `path`: its edition, read as data (`default` when it names none)."""
    return editions.of_file(path) or default
