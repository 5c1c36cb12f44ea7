"""Imported by the local pool's forkserver (after :mod:`freqlab.tokenization.prebuild` starts building the
tokenizer): what every worker would otherwise load after its fork, loaded once there and inherited by fork. The
counting kernel is compiled on its first call (:mod:`freqlab.jit`), which would cost each worker ~0.2 s of
``import numba`` and a load from numba's on-disk cache: loaded here for tokenized data (its big batches use it), not
for a text scan whose tokenizer builds here (its batches of 256 documents are counted in numpy).

Everything the forkserver loads lives as long as it does and is inherited by every worker, so it follows
:func:`gc.freeze`'s own advice for a process that forks without exec: the collector off here, every object frozen
before each fork, the collector on again in the child. No collection pass then walks these objects, in the
forkserver (~0.03-0.05 s of its start-up, measured with ``perf``) or in a worker (whose collections would also
copy the pages they touch).
"""

from __future__ import annotations

import contextlib
import gc
import os

from freqlab import fastokens_ahead
from freqlab.fastokens_ahead import FORKSERVER_ENV

if os.environ.get(FORKSERVER_ENV) == "1":  # only there (a test may import this)
    gc.disable()  # before numba's import below (see above)
    os.register_at_fork(before=gc.freeze, after_in_child=gc.enable)

import numpy as np

from freqlab.scan.counts import count_codes

# one call on the types a count passes (int64 codes, int64 counts) loads the compiled code from numba's cache (or
# compiles it once); the forkserver swallows only an ImportError from its preloaded modules, so any other failure
# is left to the workers, whose first count raises it as a scan error. Not where a tokenizer builds for a text scan:
# its batches are counted in numpy (counts.COMPILED_FROM), and numba's import would only slow the build down (a
# later scan of tokenized data on this forkserver then loads it in each worker)
if not fastokens_ahead.REQUESTED:
    with contextlib.suppress(Exception):
        count_codes(np.zeros(1, np.int64), np.zeros(2, np.int64))
