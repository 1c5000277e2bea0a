"""The check cases of each notebook's exercises: how a test cell calls a student's function, what it compares
the result with, and which usual mistakes it names. One module per notebook, named by its topic:

    dtypes (01)
    autograd (02)
    modules (03)
    training_step (04)
    flops (05)
    memory (06)
    checkpointing (07)
    timing (08)
    cost (09)
    sharding, pipeline (10)

A test cell reads as the exercise's specification: its check groups, and in each group the cases with their
expected values and sources; the calls below do the comparing and the hints. Expected values are measured
here (a real tensor's nbytes, torch.finfo) or passed in by the test cell (reference numbers with sources);
no module holds an exercise's answer. A test cell imports its module and `lecture2.checks`; where its verdict is
computed is the caller's choice (the lab, validate, the judge: `checks.reporting_to`). Under grading no student
code runs in the process that checks, so nothing a notebook's cells did can change how a check runs.
"""
