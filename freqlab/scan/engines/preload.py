"""Imported by the local pool's forkserver (after :mod:`freqlab.tokenization.prebuild` starts building the
tokenizer): what every worker would otherwise load after its fork, loaded once there and inherited by fork. The
counting kernel is compiled on its first call (:mod:`freqlab.jit`), which would cost each worker ~0.2 s of
``import numba`` and a load from numba's on-disk cache; here it runs while the tokenizer builds on its thread.
"""

from __future__ import annotations

import contextlib

import numpy as np

from freqlab.scan.counts import count_codes

# one call on the types a count passes (int64 codes, int64 counts) loads the compiled code from numba's cache (or
# compiles it once); the forkserver swallows only an ImportError from its preloaded modules, so any other failure
# is left to the workers, whose first count raises it as a scan error
with contextlib.suppress(Exception):
    count_codes(np.zeros(1, np.int64), np.zeros(2, np.int64))
