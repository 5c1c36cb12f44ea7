"""Scans in a process forked (``os.fork``, multiprocessing's ``fork`` start method: the default on Linux before
Python 3.14) from one that had already used polars.

``fork`` copies no thread. Polars' thread pool, which a process starts with its first Parquet read or write, is
gone in a child forked after that (and in the child's children), while polars believes it is there: a polars call
that needs it waits forever, and writing ``lengths.parquet`` or a checkpoint is one. A scan with an output folder
is refused there in one line saying what to do instead (start the processes with ``spawn`` or ``forkserver``); a
scan without one uses no polars and runs. The pool is checked in the process itself when the scan starts, so it
does not matter when freqlab was imported or how many forks lie between. (The parent's multiprocessing forkserver
is dealt with by :func:`freqlab.scan.engines.local.forget_inherited_forkserver`.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from freqlab.errors import FreqlabError

_THREADS_START_SECONDS = 0.5  # how long a pool just started here may take to name its threads


def _polars_thread_names() -> list[str] | None:
    """The names of this process's polars pool threads (``polars-N``), or None where they cannot be seen."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # no /proc: not Linux, where fork is not the default start method
        return None
    names = []
    for task in tasks:
        with contextlib.suppress(OSError):
            with open(f"/proc/self/task/{task}/comm") as handle:
                name = handle.read().strip()
            if name.startswith("polars-") and name[7:].isdigit():
                names.append(name)
    return names


def polars_pool_lost() -> bool:
    """Whether polars' thread pool is set up in this process without its threads (inherited through ``fork``).

    Asking polars for its pool's size starts the pool where it was not set up yet; where it was set up in an
    ancestor, polars answers from the copied state and no ``polars-N`` thread exists here.
    """
    if "polars" not in sys.modules:
        return False
    pid = os.getpid()
    if pid not in _POOL_LOST:  # the answer holds for this process's lifetime: a pool's threads do not come or go
        _POOL_LOST[pid] = _pool_lost_here()
    return _POOL_LOST[pid]


_POOL_LOST: dict[int, bool] = {}  # by process id, forgotten in a forked child: its id may be a dead ancestor's
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL_LOST.clear)


def _pool_lost_here() -> bool:
    if _polars_thread_names() is None:
        return False
    sys.modules["polars"].thread_pool_size()
    deadline = time.monotonic() + _THREADS_START_SECONDS
    while not _polars_thread_names():
        if time.monotonic() > deadline:
            return True
        time.sleep(0.01)
    return False


def check_outputs_writable(out) -> None:
    """Refuse to write outputs (``out``: the output folder, None for none) where polars would wait forever."""
    if out is not None and polars_pool_lost():
        raise FreqlabError(
            f"cannot write {out} from this process: it was forked from a process that had used polars (fork copies "
            "no thread, so polars would wait forever for its thread pool); start the processes with "
            "multiprocessing.get_context('spawn') or 'forkserver', or scan here without an output folder (out=None)"
        )
