"""What a file's path says about who handed it in and which notebook it is. The names LMSs and nbgrader's exchange
give to what they hand back, the student ids the course accepts, a browser's renamings, and a slug for a name.

Pure functions of strings: it reads and writes nothing.
"""
from __future__ import annotations

import re
import unicodedata

from lecture2.editions import EDITIONS

from .. import ASSIGNMENT

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}")  # also what `make handin STUDENT=...` accepts
NOT_STUDENTS = {ASSIGNMENT, *(e.folder for e in EDITIONS.values()), "notebooks", "submitted", "lecture2-student", "__MACOSX"}

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+)(?P<late>_LATE)?_(?P<id>\d+)_\d+_(?P<file>.+)$")
MOODLE_DIR = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_?$")
EXCHANGE_DIR = re.compile(r"^(?P<student>[^+]+)\+(?P<assignment>[^+]+)\+(?P<time>[^+]+)(?:\+[^+]*)?$")
PLAIN = re.compile(r"^(?P<student>[A-Za-z0-9][A-Za-z0-9_.@+-]*?)__(?P<file>.+)$")
RENAMED = re.compile(r"(-\d+|-Copy\d*| ?\(\d+\))$")


def slug(text: str) -> str:
    """A student id the grader accepts: ASCII letters, digits and -, from a name like "José Núñez"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]+", "-", ascii_text).strip("-").lower() or "student"
