"""Build a cached tokenizer's engines once, in the process the local pool's workers fork from.

fastokens objects cannot be pickled and have no serialized form (its ``Tokenizer`` offers ``from_json_str``,
``from_file``, ``from_tiktoken``, ``from_model``, nothing that dumps), so each worker process used to build its own:
Llama 3's ``tokenizer.json`` costs ~0.9 core-seconds per build (measured in ``scripts/bench_startup.md``). A
process forked *after* a build inherits it, though. The local engine's forkserver imports this module first (after
:mod:`freqlab.fastokens_ahead`, which has started building fastokens already), with ``FREQLAB_PREBUILD`` naming the
tokenizer's on-disk cache entry (:func:`freqlab.tokenization.load.cache_entry`): a thread rebuilds the verified
counter from the entry, takes fastokens from :mod:`~freqlab.fastokens_ahead` when it was built from the very
source verified (else builds it), builds what else counts (tiktoken for texts fastokens' preset leaves to it, the
reference when added tokens send some texts to it) and shares the engines (:meth:`TokenCounter.share_engines`),
while the forkserver imports freqlab's other modules (fastokens releases the GIL while it builds). The thread is
joined before the forkserver's first fork (``os.register_at_fork``); the reference builds on a second thread
joined by the first, and building starts no thread of its own (checked: one thread before and after), so no fork
ever copies a running thread. A worker's counter, unpickled,
finds the engines by its fingerprint (a sha256 of all its backends' data), so it uses them only when its data is
the very same; any other counter builds its own, as before.

Nothing is verified here: only an entry whose verdicts already accept the fast backend is used (the driver
loads the same entry, and verifies whatever the entry lacks). Any failure leaves the forkserver as it was.
"""

from __future__ import annotations

import threading
from pathlib import Path

from freqlab import fastokens_ahead
from freqlab.fastokens_ahead import start_building
from freqlab.tokenization.backends import BACKEND_FASTOKENS, FastokensEngine, is_engine_failure
from freqlab.tokenization.cache import read_entry
from freqlab.tokenization.counter import TokenCounter
from freqlab.tokenization.verify import verified


def prebuild(path: str | Path) -> TokenCounter | None:
    """Build and share the engines of the cache entry at ``path``; the counter, or None when the entry is unusable
    (missing, corrupt, or fastokens not verified in it: then nothing is built).
    """
    entry = read_entry(Path(path))
    if entry is None:
        return None
    candidate = TokenCounter(**{**entry["state"], "name": "", "spec": ""})
    verdicts = entry["verdicts"]
    if BACKEND_FASTOKENS not in candidate.backends[:-1] or any(b not in verdicts for b in candidate.backends[:-1]):
        return None  # a verdict missing: the driver computes it, the workers build what they use
    counter = verified(candidate, refusals=entry["refusals"], verify_texts=None, verdicts=verdicts)
    if counter.backend != BACKEND_FASTOKENS:
        return None  # refused here: the next backend is cheap to build
    # never run here: running would start the backends' own threads
    if fastokens_ahead.building():  # the rest while fastokens builds ahead, then it, if from the input verified
        counter.build_engines(counter.engines_used()[1:])
        ahead = fastokens_ahead.take(entry.get("fastokens_input"))
        if ahead is not None:
            counter.adopt(BACKEND_FASTOKENS, FastokensEngine(counter.source(BACKEND_FASTOKENS), ahead))
    counter.build_engines()  # side by side: whatever is not built yet
    counter.share_engines()
    return counter


_BUILDING: threading.Thread | None = None


def _prebuild_from_environment() -> None:
    """Start building the entry named by ``FREQLAB_PREBUILD`` on a thread, joined before this process forks."""
    global _BUILDING
    path = fastokens_ahead.REQUESTED
    if path and _BUILDING is None:
        _BUILDING = start_building(_build_quietly, path)


def _build_quietly(path: str) -> None:
    try:
        prebuild(path)
    except BaseException as exc:  # a Rust panic too: the workers then build their own
        if not is_engine_failure(exc):
            raise


_prebuild_from_environment()
