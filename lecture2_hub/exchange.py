"""nbgrader's exchange as the instructor's formgrader on the hub uses it (its ✉ Release Feedback button).

nbgrader copies a feedback page into the exchange with the page's own mode. `make hub` makes the course folder
private to the instructor (lecture2_hub.accounts), so pages come out 0600 and the student's Fetch Feedback could
not read them. This release_feedback makes every page it released readable, as `make feedback` does: the
exchange's feedback folder lists nothing, and each page is named by a hash of its submission's secret, so only
its own student finds it. Named in the instructor's nbgrader config by the hub (c.ExchangeFactory.release_feedback).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback


class ReleaseFeedbackReadable(ExchangeReleaseFeedback):
    def copy_files(self):
        super().copy_files()
        for page in Path(self.dest_path).glob("*.html"):
            st = page.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & stat.S_IROTH:
                os.chmod(page, 0o644)
