"""Imported by the local pool's forkserver (after :mod:`freqlab.tokenization.prebuild` starts building the
tokenizer): what every worker would otherwise load after its fork, loaded once there and inherited by fork. The
counting kernel is compiled on its first call (:mod:`freqlab.jit`), which would cost each worker ~0.2 s of
``import numba`` and a load from numba's on-disk cache; here it runs while the tokenizer builds on its thread.
"""

from __future__ import annotations

import contextlib

from freqlab.scan.counts import count_codes

# the forkserver swallows only an ImportError from its preloaded modules: any other failure here would stop it, so
# it is left to the workers, whose first count raises it as a scan error
with contextlib.suppress(Exception):
    count_codes.compiled()
