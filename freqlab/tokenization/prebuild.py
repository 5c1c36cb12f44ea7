"""Build a cached tokenizer's engines once, in the process the local pool's workers fork from.

fastokens objects cannot be pickled and have no serialized form (its ``Tokenizer`` offers ``from_json_str``,
``from_file``, ``from_tiktoken``, ``from_model``, nothing that dumps), so each worker process used to build its own:
Llama 3's ``tokenizer.json`` costs ~0.9 core-seconds per build (measured in ``scripts/bench_startup.md``). A
process forked *after* a build inherits it, though. The local engine's forkserver imports this module first, with
``FREQLAB_PREBUILD`` naming the tokenizer's on-disk cache entry (:func:`freqlab.tokenization.load.cache_entry`): a
thread rebuilds the verified counter from the entry, builds the backend that counts ordinary texts (and the
reference, when added tokens send some texts to it) and shares the engines (:meth:`TokenCounter.share_engines`),
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

import os
import threading
from collections.abc import Callable
from pathlib import Path

from freqlab.tokenization.backends import BACKEND_FASTOKENS, is_engine_failure
from freqlab.tokenization.cache import read_entry
from freqlab.tokenization.counter import TokenCounter
from freqlab.tokenization.verify import verified

ENV = "FREQLAB_PREBUILD"  # the cache entry to build, in the forkserver's environment


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
    counter.build_engines()  # never run here: running would start the backends' own threads
    counter.share_engines()
    return counter


_BUILDING: threading.Thread | None = None


def _prebuild_from_environment() -> None:
    """Start building the entry named by ``FREQLAB_PREBUILD`` on a thread, joined before this process forks."""
    path = os.environ.get(ENV)
    if path and _BUILDING is None:
        _start_building(_build_quietly, path)


def _start_building(build: Callable[..., object], *args: object) -> None:
    """Run ``build(*args)`` on the thread this process joins before it forks.

    Not a daemon: Python would end it inside fastokens' native build if the forkserver exited mid-build (its driver
    stopped), which aborts the process (see :meth:`Engines.build`). Waiting for the build instead would keep the
    forkserver, and the caller's pipes it holds, alive for the rest of the build after the driver is gone: so a
    process exiting while it still builds ends at once (the hook runs before Python joins its threads; a
    forkserver has nothing to clean up).
    """
    global _BUILDING
    _BUILDING = threading.Thread(target=build, args=args, name="freqlab-prebuild", daemon=False)
    _BUILDING.start()
    os.register_at_fork(before=_BUILDING.join)
    register = getattr(threading, "_register_atexit", None)  # Python 3.9+: what concurrent.futures uses too
    if register is not None:
        register(_exit_if_building)


def _exit_if_building() -> None:
    if _BUILDING is not None and _BUILDING.is_alive():
        os._exit(0)


def _build_quietly(path: str) -> None:
    try:
        prebuild(path)
    except BaseException as exc:  # a Rust panic too: the workers then build their own
        if not is_engine_failure(exc):
            raise


_prebuild_from_environment()
