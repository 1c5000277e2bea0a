"""lecture2_grader.collect / intake (`make collect ZIP=...`): LMS downloads into submitted/<student>/lec02/,
notebook by notebook, an earlier copy never lost. No grading here: files are placed, not run."""
from __future__ import annotations

import datetime as dt
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import nbformat
import pytest

from conftest import RELEASE, ROOT
from lecture2_grader import collect as collect_cli, handin, intake
from lecture2_grader.collect import collect

NB1, NB2, NB9 = "01_tensors_dtypes.ipynb", "02_autograd.ipynb", "09_training_cost.ipynb"
DUE = "2026-03-02T23:59:00+08:00"


def _course(root: Path, due: str | None = DUE) -> Path:
    shutil.copy(ROOT / "nbgrader_config.py", root)
    if due:
        with (root / "nbgrader_config.py").open("a", encoding="utf-8") as f:
            f.write(f'\nc.Lecture2Grader.due = "{due}"\n')
    shutil.copytree(RELEASE.parent, root / "notebooks")
    return root


def _nb(name: str, mark: str = "") -> bytes:
    """The release of `name`, changed by `mark` (a distinct submission of the same notebook)."""
    data = (RELEASE / name).read_bytes()
    return data.replace(b"YOUR CODE HERE", f"YOUR CODE HERE{mark}".encode(), 1) if mark else data


def _zip(path: Path, entries: dict[str, bytes], when=(2026, 3, 1, 10, 0, 0)) -> Path:
    """A zip as an LMS writes one: entry name -> bytes; a (name, time) key gives that entry its own time."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            name, at = name if isinstance(name, tuple) else (name, when)
            zf.writestr(zipfile.ZipInfo(name, at), data)
    return path


@pytest.fixture
def course(tmp_path) -> Path:
    return _course(tmp_path)


def _placed(course: Path, student: str) -> dict[str, bytes]:
    folder = course / "submitted" / student / "lec02"
    return {p.name: p.read_bytes() for p in folder.glob("*.ipynb")}


def test_canvas_moodle_and_plain_names_are_placed_and_strays_reported(course):
    archive = _zip(course / "submissions.zip", {
        "smithjohn_12345_6789012_01_tensors_dtypes.ipynb": _nb(NB1),
        "smithjohn_LATE_12345_6789013_02_autograd-1.ipynb": _nb(NB2),
        "José Núñez_123456_assignsubmission_file_/01_tensors_dtypes (1).ipynb": _nb(NB1),
        "alice/02_autograd.ipynb": _nb(NB2),
        "bob__01_tensors_dtypes.ipynb": _nb(NB1),
        "carol/lec02/01_tensors_dtypes.ipynb": _nb(NB1),
        "01_tensors_dtypes.ipynb": _nb(NB1),  # whose?
        "readme.txt": b"hello",
    })
    placed, unplaced = collect(course, [archive])
    assert sorted(placed) == ["alice", "bob", "carol", "jose-nunez-123456", "smithjohn-12345"]
    assert sorted(_placed(course, "smithjohn-12345")) == [NB1, NB2]
    assert _placed(course, "jose-nunez-123456") == {NB1: _nb(NB1)}
    assert len(unplaced) == 2 and any("01_tensors_dtypes.ipynb: no student recognised" in u for u in unplaced)
    assert any("readme.txt: not a notebook" in u for u in unplaced)
    assert (course / "downloaded" / "lec02" / "archive" / "submissions.zip").is_file()


def test_a_late_zip_of_one_notebook_keeps_the_others_and_the_earlier_copy(course):
    """Is a late zip holding only notebook 09 merged into the student's folder (01 and 02 stay), the earlier 09
    kept in history, the times taken from the LMS's zip and its _LATE marker, and lateness against the due date?"""
    first = _zip(course / "first.zip", {f"smithjohn_12345_1_{n}": _nb(n) for n in (NB1, NB2, NB9)})
    collect(course, [first])
    late = _zip(course / "late.zip", {("smithjohn_LATE_12345_2_09_training_cost.ipynb", (2026, 3, 4, 9, 30, 0)): _nb(NB9, "!")})
    placed, unplaced = collect(course, [late])
    assert not unplaced and "replaces the one of 2026-03-01T02:00:00Z (kept in history)" in placed["smithjohn-12345"][0]
    now = _placed(course, "smithjohn-12345")
    assert now == {NB1: _nb(NB1), NB2: _nb(NB2), NB9: _nb(NB9, "!")}, "the other notebooks stay as they were"
    kept = sorted((course / "submitted" / "smithjohn-12345" / "history" / "lec02" / "09_training_cost").glob("*.ipynb"))
    assert [p.read_bytes() for p in kept] == [_nb(NB9), _nb(NB9, "!")]
    late_by = intake.lateness(course, "smithjohn-12345", intake.Term.load(course))
    assert late_by["09_training_cost"]["late"] and late_by["09_training_cost"]["lms_late"]
    assert late_by["09_training_cost"]["late_seconds"] == pytest.approx(33 * 3600 + 31 * 60)  # 09:30+08 on the 4th vs 23:59 on the 2nd
    assert late_by["09_training_cost"]["attempts"] == 2
    assert not late_by["01_tensors_dtypes"]["late"] and late_by["01_tensors_dtypes"]["late_seconds"] == 0
    stamp = (course / "submitted" / "smithjohn-12345" / "lec02" / "timestamp.txt").read_text()
    assert stamp.strip() == "2026-03-04 01:30:00.000000 UTC", "the newest submission's time, as nbgrader writes it"


def test_collecting_again_changes_nothing_and_an_older_copy_goes_to_history_only(course):
    new = _zip(course / "new.zip", {("alice/01_tensors_dtypes.ipynb", (2026, 3, 3, 8, 0, 0)): _nb(NB1, "v2")})
    old = _zip(course / "old.zip", {("alice/01_tensors_dtypes.ipynb", (2026, 3, 1, 8, 0, 0)): _nb(NB1, "v1")})
    collect(course, [new])
    again, _ = collect(course, [new])
    assert again["alice"] == ["01_tensors_dtypes (unchanged)"]
    older, _ = collect(course, [old])
    assert "older copy" in older["alice"][0] and "kept in history only" in older["alice"][0]
    assert _placed(course, "alice") == {NB1: _nb(NB1, "v2")}
    assert len(intake.records(course, "alice")) == 2


def test_a_file_placed_by_hand_is_kept_before_it_is_replaced(course):
    folder = course / "submitted" / "dana" / "lec02"
    folder.mkdir(parents=True)
    (folder / NB1).write_bytes(b"placed by hand")
    collect(course, [_zip(course / "z.zip", {"dana/01_tensors_dtypes.ipynb": _nb(NB1)})])
    kept = list((course / "submitted" / "dana" / "history" / "lec02" / "01_tensors_dtypes").glob("*.ipynb"))
    assert b"placed by hand" in [p.read_bytes() for p in kept]


def test_a_misnamed_notebook_is_matched_and_reported_and_an_ambiguous_one_is_not_placed(course):
    """01_tensor_dtypes.ipynb (a letter short) of a recognised student goes where its cells belong, and says so;
    a file named like notebook 01 holding notebook 02's cells is not placed, and the line says why."""
    archive = _zip(course / "z.zip", {"alice/01_tensor_dtypes.ipynb": _nb(NB1),
                                      "bob/01_tensor_dtypes.ipynb": _nb(NB2),
                                      "carol/my homework.ipynb": _nb(NB9),
                                      "dan/02_autograd.ipynb": _nb(NB1)})
    placed, unplaced = collect(course, [archive])
    assert "[file '01_tensor_dtypes.ipynb': matched by cells and nearest name]" in placed["alice"][0]
    assert _placed(course, "alice") == {NB1: _nb(NB1)}
    assert "matched by cells" in placed["carol"][0] and _placed(course, "carol") == {NB9: _nb(NB9)}
    assert "bob" not in placed and "dan" not in placed
    (line,) = [u for u in unplaced if "bob" in u]
    assert "its cells are those of 02_autograd.ipynb but its name is nearest 01_tensors_dtypes.ipynb" in line
    (line,) = [u for u in unplaced if "dan" in u]  # saved under another notebook's name
    assert "named 02_autograd.ipynb but its cells are those of 01_tensors_dtypes.ipynb: not placed" in line


def test_a_handin_zip_collects_back_to_the_same_student(course, tmp_path):
    """Does `make handin`'s zip, handed in directly (STUDENT=...) or uploaded to Canvas, collect every notebook
    back to that student, byte for byte?"""
    own = handin.write(RELEASE, tmp_path / handin.zip_name("erin"), "erin")
    placed, unplaced = collect(course, [tmp_path / handin.zip_name("erin")])
    assert not unplaced and _placed(course, "erin") == {n: (RELEASE / n).read_bytes() for n in own}
    handin.write(RELEASE, tmp_path / "lec02-handin.zip")
    canvas = _zip(course / "canvas.zip", {"doefrank_777_888_lec02-handin.zip": (tmp_path / "lec02-handin.zip").read_bytes()})
    placed, unplaced = collect(course, [canvas])
    assert not unplaced and sorted(_placed(course, "doefrank-777")) == sorted(own)
    assert intake.lms_identity(course, "doefrank-777") == ("canvas", "777")


def test_nbgrader_exchange_inbound_folders_are_collected_with_their_times(course, tmp_path):
    inbound = tmp_path / "inbound"
    sub = inbound / "gina+lec02+2026-03-05 04:00:00.000000 UTC+abc123"
    sub.mkdir(parents=True)
    (sub / NB1).write_bytes(_nb(NB1))
    (sub / "timestamp.txt").write_text("2026-03-05 04:00:00.000000 UTC")
    placed, unplaced = collect(course, [inbound])
    assert placed == {"gina": ["01_tensors_dtypes (new, late 60.0 h)"]} and not unplaced


def test_hostile_archives_cost_nothing(course, monkeypatch):
    """Entry names that climb out (../), absolute paths and Windows backslashes stay inside submitted/<student>/;
    a student id that is only dots is refused; an entry that inflates past the size limit is not read (a line says
    so); a file that is not a zip is one line."""
    archive = _zip(course / "z.zip", {"../../outside/01_tensors_dtypes.ipynb": _nb(NB1),
                                      "/abs/01_tensors_dtypes.ipynb": _nb(NB1),
                                      "win\\01_tensors_dtypes.ipynb": _nb(NB1),
                                      "../01_tensors_dtypes.ipynb": _nb(NB1)})
    placed, unplaced = collect(course, [archive])
    assert sorted(placed) == ["abs", "outside", "win"]
    assert not (course.parent / "outside").exists() and not (course / "submitted" / "..").resolve().name == "outside"
    monkeypatch.setattr(intake.archives, "MAX_ENTRY", 32 * 2**20)  # (4 GiB by default: a notebook's outputs may be large)
    bomb = course / "bomb.zip"  # 40 MiB that deflate to a few kB: read no further than the limit, and said so
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bomb/01_tensors_dtypes.ipynb", b" " * (40 * 2**20))
    assert bomb.stat().st_size < 2**20
    placed, unplaced = collect(course, [bomb])
    assert "bomb" not in placed and any("40 MiB, not read (limit 32 MiB)" in line for line in unplaced), unplaced
    (course / "bad.zip").write_bytes(b"not a zip")
    _, unplaced = collect(course, [course / "bad.zip"])
    assert unplaced == ["bad.zip: not a zip file this collector reads (File is not a zip file)"]


def test_a_due_date_without_an_offset_is_refused_with_an_example(tmp_path):
    course = _course(tmp_path, due="2026-03-02 23:59")
    with pytest.raises(SystemExit, match="no UTC offset: write e.g. '2026-03-15T23:59:00\\+08:00'"):
        intake.Term.load(course)


def test_collect_prints_one_line_per_student_escaped(course, capsys):
    archive = _zip(course / "z.zip", {"evil\x1b[2J__01_tensors_dtypes.ipynb": _nb(NB1), "ok/01_tensors_dtypes.ipynb": _nb(NB1)})
    assert collect_cli.main([str(archive), "--course", str(course)]) == 0
    out = capsys.readouterr()
    assert "ok: 01_tensors_dtypes (new)" in out.out and "\x1b" not in out.out
    record = json.loads((course / "submitted" / "ok" / "history" / "lec02" / "intake.json").read_text())
    assert record["received"][0]["time_source"].startswith("zip entry time")
    assert dt.datetime.fromisoformat(record["received"][0]["submitted_at"].replace("Z", "+00:00")).tzinfo


def test_a_notebook_with_large_outputs_is_collected_whole_without_being_held_in_memory(course):
    """A correct notebook that carries 40 MB of saved plots (over the 16 MiB kept in memory) is spooled to disk,
    recognised by its cells, placed byte for byte, and its earlier copy kept."""
    import base64
    import os

    nb = nbformat.reads(_nb(NB1).decode(), 4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(os.urandom(2_000_000)).decode()})]
    big = nbformat.writes(nb).encode()
    assert len(big) > intake.IN_MEMORY
    archive = _zip(course / "big.zip", {"kim/notes-final.ipynb": big})
    placed, unplaced = collect(course, [archive])
    assert placed == {"kim": ["01_tensors_dtypes (new [file 'notes-final.ipynb': matched by cells])"]}, (placed, unplaced)
    assert (course / "submitted" / "kim" / "lec02" / NB1).read_bytes() == big
    assert not list((course / "downloaded").glob(".spool-*")), "the spool is removed"


def test_collecting_streams_every_entry_to_disk_whatever_the_archive(course, monkeypatch):
    """A download holding a hand-in zip of sixteen distinct 16 MiB files (a few hundred KB zipped): collecting holds
    a chunk at a time and one file's sources while it recognises it, not the files (the earlier collector held every
    entry up to 16 MiB in memory: 64 of them took 1.07 GB); a hand-in zip gives at most MAX_NESTED_TOTAL bytes of
    files, the rest named as not read."""
    import io
    import tracemalloc

    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as zf:
        for k in range(16):
            zf.writestr(f"scratch/copy{k}.ipynb", bytes([k]) * 16 * 2**20)
    archive = _zip(course / "download.zip", {"alice_123_456_handin.zip": inner.getvalue()})
    monkeypatch.setattr(intake.archives, "MAX_NESTED_TOTAL", 10 * 16 * 2**20)
    tracemalloc.start()
    try:
        placed, unplaced = collect(course, [archive])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MiB held"
    assert sum("not read (the files of this zip take over 160 MiB)" in u for u in unplaced) == 6, unplaced
    assert not list((course / "downloaded").glob(".spool-*")), "the spool is removed"


def test_a_file_slow_to_read_is_placed_by_its_name_within_the_reading_budget(course, monkeypatch):
    """Recognising a file by its cells gives it READ_SECONDS (here 0.2 s): millions of brackets in its outputs (a few
    MB zipped) are not read for ever; a file so named is placed (grading then says it took too long), a misnamed one
    is reported as not recognised."""
    import time

    from lecture2_grader import runtime

    text = _nb(NB1).decode()
    cut = text.index('"outputs": [') + len('"outputs": [')
    slow = (text[:cut] + "[]," * 8_000_000 + text[cut:]).encode()
    archive = _zip(course / "slow.zip", {"kim/01_tensors_dtypes.ipynb": slow, "lee/notes.ipynb": slow})
    monkeypatch.setattr(runtime, "READ_SECONDS", 0.2)
    start = time.monotonic()
    placed, unplaced = collect(course, [archive])
    assert time.monotonic() - start < 20
    assert placed == {"kim": ["01_tensors_dtypes (new)"]}, (placed, unplaced)
    assert any("notes.ipynb" in u and "no notebook of the assignment recognised" in u for u in unplaced), unplaced


# ---- an exchange that students write in: owners, links and times (issue 38)

@pytest.fixture
def students():
    """Two Unix users (as the course's hub makes them), removed afterwards; skipped unless root."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd: a submission's owner is a Unix user")
    names = [f"l2c{i}-{secrets.token_hex(3)}" for i in (1, 2)]
    for name in names:
        subprocess.run(["useradd", "--no-create-home", name], check=True, capture_output=True)
    yield [pwd.getpwnam(n) for n in names]
    for name in names:
        subprocess.run(["userdel", name], capture_output=True)


def _submission(inbound: Path, owner, named: str, data: bytes, stamp: str = "2026-03-01 10:00:00.000000 UTC") -> Path:
    """An nbgrader submission folder as a student (`owner`) leaves it, named for the student `named`."""
    folder = inbound / f"{named}+lec02+{stamp}+{secrets.token_hex(3)}"
    folder.mkdir(parents=True)
    (folder / NB1).write_bytes(data)
    (folder / "timestamp.txt").write_text(stamp)
    for path in (folder, folder / NB1, folder / "timestamp.txt"):
        os.chown(path, owner.pw_uid, owner.pw_gid)
    return folder


def test_an_exchange_submission_counts_only_for_the_student_who_owns_its_folder(course, tmp_path, students):
    """`nbgrader submit --student bob` from alice's terminal made bob's graded notebook (issue 38): is a folder
    named for one student but owned by another refused and said, and a file someone else put into a student's
    folder refused too?"""
    ana, ben = students
    inbound = tmp_path / "inbound"
    _submission(inbound, ana, ana.pw_name, _nb(NB1, "ana's"))
    forged = _submission(inbound, ana, ben.pw_name, _nb(NB1, "forged"))
    planted = _submission(inbound, ben, ben.pw_name, _nb(NB1, "ben's"))
    os.chown(planted, ana.pw_uid, ana.pw_gid)  # ben's file inside a folder of ana's: whose is it?
    placed, unplaced = collect(course, [inbound])
    assert _placed(course, ana.pw_name)[NB1] == _nb(NB1, "ana's")
    assert ben.pw_name not in placed and not (course / "submitted" / ben.pw_name).exists(), placed
    said = "\n".join(unplaced)
    assert f"{forged.name}/{NB1} (student {ben.pw_name}): its folder belongs to {ana.pw_name}, not to {ben.pw_name}" in said
    assert f"{planted.name}/{NB1} (student {ben.pw_name}): its folder belongs to several users" in said, said


def test_a_students_time_is_the_systems_and_the_time_she_wrote_is_only_shown(course, tmp_path, students):
    """A timestamp.txt of 2099 went into grades.csv (issue 38): is a student's submission dated by the system's
    change time, with what she wrote shown beside it and kept in the record, never used?"""
    ana = students[0]
    inbound = tmp_path / "inbound"
    before = dt.datetime.now(dt.timezone.utc)
    _submission(inbound, ana, ana.pw_name, _nb(NB1), stamp="2099-01-01 00:00:00.000000 UTC")
    placed, _ = collect(course, [inbound])
    assert "its timestamp.txt says 2099-01-01" in placed[ana.pw_name][0] and "(not used)" in placed[ana.pw_name][0]
    record = intake.records(course, ana.pw_name)[-1]
    assert abs(dt.datetime.fromisoformat(record["submitted_at"]) - before) < dt.timedelta(minutes=1), record
    assert record["claimed_at"].startswith("2099") and "set by the system" in record["time_source"]


def test_a_link_in_the_inbound_is_never_followed_even_when_swapped_in_while_collecting(course, tmp_path, students):
    """A student who flipped her entry between her file and a link to solutions/ won on the third collect (issue 38):
    with the entry swapped back and forth all the while, does a collect ever read what the link points to?"""
    ana = students[0]
    secret = tmp_path / "solutions.ipynb"
    secret.write_bytes(_nb(NB1, "THE MODEL ANSWER"))
    inbound = tmp_path / "inbound"
    folder = _submission(inbound, ana, ana.pw_name, _nb(NB1, "hers"))
    link = folder / "link.tmp"
    plain = folder / "plain.tmp"
    plain.write_bytes(_nb(NB1, "hers"))
    os.chown(plain, ana.pw_uid, ana.pw_gid)
    stop = threading.Event()

    def flip():  # as the student, as fast as she can: her file, a link, her file, ...
        while not stop.is_set():
            link.symlink_to(secret)
            os.lchown(link, ana.pw_uid, ana.pw_gid)
            os.rename(link, folder / NB1)
            os.link(plain, folder / "back.tmp")
            os.rename(folder / "back.tmp", folder / NB1)

    def saw_the_link() -> bool:
        return any("a link, not followed" in n or "changed while it was read" in n for n in notes)

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads take turns often, as two processes on two cores would
    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        notes = []
        for done in range(1, 400):  # at least 25 collects, and on until one has met the link (a loaded machine
            _, unplaced = collect(course, [inbound])  # may schedule the student's thread late)
            notes += unplaced
            if done >= 25 and saw_the_link():
                break
    finally:
        stop.set()
        flipper.join()
        sys.setswitchinterval(switching)
    history = b"".join(p.read_bytes() for p in (course / "submitted").rglob("*.ipynb"))
    assert b"THE MODEL ANSWER" not in history
    assert b"hers" in history  # her own file was collected between the swaps
    assert saw_the_link(), notes[:5]


def test_the_hubs_english_assignment_is_collected_as_the_same_notebooks():
    """Issue 41: the hub releases each edition as an assignment of its own (lec02, lec02-en); a submission of either
    from nbgrader's inbound folder is the student's notebook (graded in the edition its file names)."""
    from lecture2_grader.intake.archives import Received
    from lecture2_grader.intake.recognise import attribute

    released = {"01_tensors_dtypes.ipynb": set()}
    for assignment in ("lec02", "lec02-en"):
        item = attribute(Received("x", b"", parts=[f"bob+{assignment}+2026-03-01 10:00:00.000000 UTC",
                                                   "01_tensors_dtypes.ipynb"]), released)
        assert (item.student, item.lms) == ("bob", "exchange"), (assignment, item)
    other = attribute(Received("x", b"", parts=["bob+lec03+2026-03-01 10:00:00.000000 UTC", "01_tensors_dtypes.ipynb"]),
                      released)
    assert other.lms != "exchange"
