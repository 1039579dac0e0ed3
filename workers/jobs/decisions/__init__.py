"""Carrying out an administrator's decision (R13) on a frozen set of messages, free of Django.

The console (console.decisions.execution) calls three entry points, each handed what it needs
at once, and writes what they return:
- `frozen_number` (frozen.py), once: the frozen ids numbered with their chunk;
- `plan_write(PlanParams)` (plan.py), once: every frozen id's current state, with Spark or, for
  a small set, pyarrow (a reprocess planned from the console's index has no plan);
- `chunk_run(ChunkParams) -> ChunkResult` (run.py), once a chunk: the chunk decided (chunk.py,
  pure pyarrow) and its directories written to the lake, for the console to commit.
The sweeper and the request page read a progressive redrive's steps (steps.py, frozen.py).
"""

from workers.jobs.decisions.frozen import frozen_number, step_sizes
from workers.jobs.decisions.plan import PlanParams, plan_write
from workers.jobs.decisions.run import ChunkParams, ChunkResult, chunk_run
from workers.jobs.decisions.steps import (
    STEP_FAILED,
    STEP_PASSED,
    STEP_PENDING,
    StepOutcome,
    percent,
    step_detail,
    step_outcome,
)

__all__ = [
    "STEP_FAILED",
    "STEP_PASSED",
    "STEP_PENDING",
    "ChunkParams",
    "ChunkResult",
    "PlanParams",
    "StepOutcome",
    "chunk_run",
    "frozen_number",
    "percent",
    "plan_write",
    "step_detail",
    "step_outcome",
    "step_sizes",
]
