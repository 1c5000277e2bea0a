"""The judge's side of the wire: what runs a notebook's test cells and talks to the student's process.

    launch.py      starts a judge for one notebook (a child of the fork server, or a fresh process) within the
                   notebook's time limit, and stops the judges running (Ctrl-C, a Dask worker told to stop)
    preload.py     what the fork server imports once for a whole run (preload_bitsandbytes.py: notebook 06's extra)
    judge.py       the judge: runs the test cells, hidden tests included, and never holds a student's object
    link.py        its end of the wire: starts the student's process and bounds every reply
    kernel.py      the student's end, run INSIDE the sandbox: it imports nothing of the grader, only the standard
                   library and lecture2, and is the one file of this package the sandbox sees

Every limit a judge and the student's process work within comes from runtime.py, as one record
(runtime.KernelSpec) that the judge's job carries.
"""
