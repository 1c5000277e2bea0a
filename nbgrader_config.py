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

# The student's stub: a message in the course's language, raised when the exercise is called.
c.ClearSolutions.code_stub = {
    "python": '# YOUR CODE HERE (在这里写你的代码)\nraise NotImplementedError("练习还没有完成 (not implemented yet)")',
}
c.ClearSolutions.text_stub = "在这里写你的答案 (YOUR ANSWER HERE)"

# The release carries no outputs, and feedback HTML never shows hidden tests.
c.ClearOutput.enabled = True
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
