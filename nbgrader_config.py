"""nbgrader configuration for the course (read by every `nbgrader` command run from the repo root)."""
import os

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

# The lecture is one assignment, `lec02`: instructor sources in solutions/lec02/, the student release in
# notebooks/lec02/, submissions in submitted/<student>/lec02/.
c.CourseDirectory.root = os.getcwd()  # nbgrader commands run from the repository root
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "*.egg-info"]

# Torch work is slower than nbgrader's 30 s default per cell; a hung cell still ends.
c.ExecutePreprocessor.timeout = 300
c.ExecutePreprocessor.interrupt_on_timeout = True

# The edition a release writes (lecture2.editions: "zh" into notebooks/lec02, "en" into notebooks/lec02-en):
# `make release` (tools/release.py) writes both, one nbgrader run each, naming the edition in LECTURE2_RELEASE.
# The student's stub is in that edition's language, raised when the exercise is called.
from lecture2_grader.messages import say  # noqa: E402

EDITION = os.environ.get("LECTURE2_RELEASE", "zh")
c.ChooseEdition.edition = EDITION
c.ClearSolutions.code_stub = {"python": say("release.code_stub", EDITION)}
c.ClearSolutions.text_stub = say("release.text_stub", EDITION)

# The release carries no outputs, and no answer cell's note of what the student works out (docs/exercises.md's).
c.ClearOutput.enabled = True
from nbgrader.converters.generate_assignment import GenerateAssignment  # noqa: E402

c.GenerateAssignment.preprocessors = ["lecture2_grader.nbgrader_hooks.ChooseEdition",
                                      *GenerateAssignment.class_traits()["preprocessors"].default(),
                                      "lecture2_grader.nbgrader_hooks.ClearExerciseNotes"]

# nbgrader's own grading commands go through the course's sandboxed grader (lecture2_grader.nbgrader_hooks): the
# formgrader's Autograde and Generate Feedback buttons, `nbgrader autograde` and `nbgrader generate_feedback` run
# `make grade` for the students they name and never execute a notebook themselves, nor remove autograded/.
c.Autograde.exporter_class = "lecture2_grader.nbgrader_hooks.GradeWithCourseGrader"
c.GenerateFeedback.exporter_class = "lecture2_grader.nbgrader_hooks.GradeWithCourseGrader"

# The term, read by `make collect`, `make grade` and `make export` (lecture2_grader.intake, .export):
#   due              the due date, ISO 8601 with a UTC offset; a notebook submitted after it is late (grades.csv,
#                    notebooks.csv, the class report, the gradebook). Unset: only the LMS's own late marks count.
#   lms_timezone     the zone of the times in the LMS's zip files (default: the due date's offset)
#   canvas_assignment  the assignment column of export/canvas.csv, as Canvas's own export names it, e.g.
#                    "Lecture 2 notebooks (987654)"; another name makes Canvas create a new assignment
#   language         the course's language for its instructors ("zh" or "en"): `make grade`'s lines, the class
#                    report; a student's feedback, `make validate` and `make handin` follow their notebook's edition
c.Lecture2Grader.language = "zh"
# c.Lecture2Grader.due = "2026-03-15T23:59:00+08:00"
# c.Lecture2Grader.lms_timezone = "Asia/Shanghai"
# c.Lecture2Grader.canvas_assignment = "Lecture 2 notebooks (987654)"
