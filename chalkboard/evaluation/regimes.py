"""The roofline regimes a set-up is in, as `validate` groups the published measurements and as the
expected numbers read their efficiency: compute-bound, or memory-bound at a small or a large batch."""
from __future__ import annotations

import numpy as np

SMALL_BATCH = 32            # memory-bound set-ups up to this batch count as "small batch"
REGIMES = ("memory-bound, small batch", "memory-bound, large batch", "compute-bound")


def regime_index(compute, memory, batch):
    """Index into REGIMES of a set-up (numbers or numpy arrays): compute-bound where the compute
    time reaches the strict memory time (strict bound's terms), else memory-bound at a small or a
    large batch."""
    return np.where(np.asarray(compute) >= memory, 2, np.where(np.asarray(batch) <= SMALL_BATCH, 0, 1))
