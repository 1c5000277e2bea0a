"""The class roster the hub lets in: one person a row, their role, and a hash of their own password.

    name,role,password,edition
    teacher,instructor,pbkdf2_sha256$600000$<salt>$<hash>
    alice,student,pbkdf2_sha256$600000$<salt>$<hash>
    bob,student,pbkdf2_sha256$600000$<salt>$<hash>,en

A name is a Unix user name the hub can create (each student's server runs as that user): lowercase letters,
digits, - and _, starting with a letter, at most 32 characters. It is also the student's id in nbgrader's
exchange and in the grader (submitted/<name>/). `role` is `student` (the default) or `instructor`. `password`
is a PBKDF2 hash, never the password: `python -m lecture2_hub passwords ROSTER` gives every row without one a
random password, writes the hashes into the roster (the earlier file kept beside it, owner-only) and the passwords
into a file only you can read, to hand out. The demo class (demo_roster.csv, `make hub HUB_DEMO=1`) is for a first
try on your own machine only: its students share one password, DEMO_PASSWORD, and its instructor gets a new
random one at each start (`demo`), printed once. `edition` (optional) is the edition a student takes
(lecture2.editions): `zh` (the default: the assignment lec02, the lab in Simplified Chinese) or `en` (the
assignment lec02-en, the lab in English).
"""
from __future__ import annotations

import csv
import hashlib
import hmac
import io
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from lecture2 import editions
from lecture2_grader.files import OWNER_ONLY, write_atomic

DEMO_ROSTER = Path(__file__).with_name("demo_roster.csv")
DEMO_PASSWORD = "lecture2-demo"
NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
ROLES = ("student", "instructor")
_ITERATIONS = 600_000  # PBKDF2-HMAC-SHA256, OWASP's figure for 2023+


@dataclass(frozen=True)
class Person:
    name: str
    role: str  # "student" or "instructor"
    password_hash: str  # "" when none is set yet (that person cannot log in)
    edition: str = editions.SOURCE  # the edition they take: its assignment on the hub, their lab's language


class RosterError(ValueError):
    """The roster cannot be used; str() lists every bad row, one a line."""


def hash_password(password: str, iterations: int = _ITERATIONS) -> str:
    salt = secrets.token_hex(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), bytes.fromhex(salt), iterations)
    return f"pbkdf2_sha256${iterations}${salt}${digest.hex()}"


def check_password(password: str, stored: str) -> bool:
    """True when `password` matches the stored hash (constant-time comparison); False for a malformed hash."""
    try:
        scheme, iterations, salt, digest = stored.split("$")
        if scheme != "pbkdf2_sha256" or not 1000 <= int(iterations) <= 10_000_000:
            return False
        got = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), bytes.fromhex(salt), int(iterations))
    except ValueError:
        return False
    return hmac.compare_digest(got.hex(), digest)


def _rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, cells) of every row that is not blank, a comment or the header."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise RosterError(f"{path}: no such roster file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise RosterError(f"{path}: cannot be read as a UTF-8 text file ({err})") from None
    rows = []
    for number, cells in enumerate(csv.reader(io.StringIO(text)), start=1):
        cells = [c.strip() for c in cells]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if [c.lower() for c in cells[:2]] == ["name", "role"]:
            continue
        rows.append((number, cells))
    return rows


def load(path: Path) -> list[Person]:
    """The roster at `path`; RosterError naming every bad row (name, role, duplicate) and what a name must be."""
    people, problems, seen = [], [], {}
    for number, cells in _rows(path):
        name = cells[0]
        role = (cells[1] if len(cells) > 1 and cells[1] else "student").lower()
        password_hash = cells[2] if len(cells) > 2 else ""
        edition = (cells[3] if len(cells) > 3 and cells[3] else editions.SOURCE).lower()
        shown = name.encode("unicode_escape").decode("ascii")
        if not NAME.fullmatch(name):
            problems.append(f"line {number}: {shown!r} is not a valid user name: lowercase letters, digits, - and _, "
                            "starting with a letter, at most 32 characters (e.g. 'zhang-wei' or 'zhangwei2')")
        elif name in seen:
            problems.append(f"line {number}: {name!r} is already on line {seen[name]}")
        else:
            seen[name] = number
        if role not in ROLES:
            problems.append(f"line {number}: role {role!r} is not 'student' or 'instructor'")
        if edition not in editions.EDITIONS:
            problems.append(f"line {number}: edition {edition.encode('unicode_escape').decode('ascii')[:20]!r} is "
                            f"not one of {', '.join(repr(e) for e in editions.EDITIONS)}")
        people.append(Person(name, role, password_hash, edition))
    if problems:
        raise RosterError("\n".join(f"{path}: {p}" for p in problems))
    if not people:
        raise RosterError(f"{path}: the roster names nobody (one row a person: name,role)")
    if not any(p.role == "instructor" for p in people):
        raise RosterError(f"{path}: the roster has no instructor (a row: yourname,instructor)")
    return people


def set_passwords(path: Path, out: Path) -> list[str]:
    """Give every person of the roster at `path` without a password hash a random password: the hashes go into
    the roster (the earlier file kept as ROSTER.<time>.bak), the passwords into `out` (mode 0600), to hand out.
    Returns the names given one."""
    people = load(path)
    new = {p.name: secrets.token_urlsafe(9) for p in people if not p.password_hash}
    if not new:
        return []
    backup = path.with_name(f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.bak")
    write_atomic(backup, path.read_bytes(), OWNER_ONLY)  # the earlier hashes: never readable by others either
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["name", "role", "password", "edition"])
    for p in people:
        writer.writerow([p.name, p.role, hash_password(new[p.name]) if p.name in new else p.password_hash,
                         p.edition])
    write_atomic(path, buffer.getvalue(), OWNER_ONLY)  # password hashes: never readable by others, not even briefly
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        for name, password in new.items():
            fh.write(f"{name},{password}\n")
    return list(new)


def demo(state: Path) -> tuple[Path, str]:
    """The demo class's roster for one start, in the hub's own folder (owner-only): the demo students as they are
    (DEMO_PASSWORD), the instructor with a new random password. (roster path, the instructor's password)."""
    password = secrets.token_urlsafe(12)
    rows = []
    for person in load(DEMO_ROSTER):
        digest = hash_password(password) if person.role == "instructor" else person.password_hash
        rows.append([person.name, person.role, digest, person.edition])
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([["name", "role", "password", "edition"], *rows])
    path = state / "demo-roster.csv"
    write_atomic(path, buffer.getvalue(), OWNER_ONLY)
    return path, password
