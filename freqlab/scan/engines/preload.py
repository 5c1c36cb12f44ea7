"""Imported by the local pool's forkserver (after :mod:`freqlab.tokenization.prebuild` starts building the
tokenizer): what every worker would otherwise load after its fork, loaded once there and inherited by fork. The
counting kernel is compiled on its first call (:mod:`freqlab.jit`), which would cost each worker ~0.2 s of
``import numba`` and a load from numba's on-disk cache; here it runs while the tokenizer builds on its thread.
"""

from __future__ import annotations

from freqlab.scan.counts import count_codes

count_codes.compiled()
