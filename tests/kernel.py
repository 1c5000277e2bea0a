"""A live kernel for tests: run a notebook's cells, then re-run single cells with other sources."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_client.manager import start_new_kernel


@dataclass
class Result:
    """What one executed cell produced: its stdout text and, if it raised, the error."""

    stdout: str = ""
    error: str | None = None  # "ename: evalue"
    outputs: list = field(default_factory=list)


class NotebookKernel:
    """A kernel started in a notebook's folder; `grading=True` sets NBGRADER_EXECUTION as nbgrader does."""

    def __init__(self, notebook: Path, grading: bool = True, timeout: float = 300):
        env = dict(os.environ)
        env.pop("NBGRADER_EXECUTION", None)
        if grading:
            env["NBGRADER_EXECUTION"] = "autograde"
        self.notebook = notebook
        self.timeout = timeout
        self.km, self.kc = start_new_kernel(kernel_name="python3", cwd=str(notebook.parent), env=env)
        self.cells = nbformat.read(notebook, as_version=4).cells

    def run(self, source: str) -> Result:
        result = Result()

        def hook(msg):
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind == "stream" and content.get("name") == "stdout":
                result.stdout += content["text"]
            elif kind == "error":
                result.error = f"{content['ename']}: {content['evalue']}"
            if kind in ("stream", "error", "execute_result", "display_data"):
                result.outputs.append(content)

        self.kc.execute_interactive(source, output_hook=hook, timeout=self.timeout)
        return result

    def run_until(self, grade_id: str | None = None) -> None:
        """Run every code cell up to (not including) the cell with `grade_id`; all of them if None."""
        for cell in self.cells:
            if cell.cell_type != "code":
                continue
            if grade_id and cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
                return
            result = self.run(cell.source)
            if result.error and "NotImplementedError" not in result.error:
                raise AssertionError(f"{self.notebook.name}: a cell failed: {result.error}\n{cell.source[:300]}")

    def cell(self, grade_id: str) -> str:
        for cell in self.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
                return cell.source
        raise KeyError(f"{self.notebook.name} has no cell {grade_id!r}")

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
