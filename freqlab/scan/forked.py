"""A scan in a process forked (``os.fork``, multiprocessing's ``fork`` start method: the default on Linux before
Python 3.14) from one that had already used polars or started freqlab's pool.

``fork`` copies no thread. Polars' thread pool, which the parent starts with its first Parquet read or write, is
gone in the child, and a polars call that needs it waits forever: writing ``lengths.parquet`` or a checkpoint is
one. A scan with an output folder in such a child is refused in one line saying what to do instead (start the
processes with ``spawn`` or ``forkserver``); a scan without one uses no polars and runs. multiprocessing's
forkserver, which the parent's pool started, is the parent's child, not this process's: the child forgets it and
starts its own when it needs a pool (as a fresh process would).
"""

from __future__ import annotations

import contextlib
import os
import sys

from freqlab.errors import FreqlabError

_PARENT: dict = {"pid": None, "polars_threads": False}  # as seen just before this process's last fork


def _polars_threads_running() -> bool:
    """Whether this process runs polars' thread pool (its threads are named ``polars-N``; Linux only)."""
    if "polars" not in sys.modules:
        return False
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # no /proc: not Linux, where fork is not the default start method
        return False
    for task in tasks:
        with contextlib.suppress(OSError):
            with open(f"/proc/self/task/{task}/comm") as handle:
                name = handle.read().strip()
            if name.startswith("polars-") and name[7:].isdigit():
                return True
    return False


def _before_fork() -> None:
    # a process forked from such a child has polars' pool without its threads too
    _PARENT.update(pid=os.getpid(), polars_threads=_polars_threads_running() or forked_from_polars())


def _after_fork_in_child() -> None:
    from freqlab.scan.engines import local

    local.forget_inherited_forkserver()


def forked_from_polars() -> bool:
    """Whether this process was forked from one whose polars threads were running."""
    return _PARENT["pid"] not in (None, os.getpid()) and _PARENT["polars_threads"]


def check_outputs_writable(out) -> None:
    """Refuse to write outputs (``out``: the output folder, None for none) where polars would wait forever."""
    if out is not None and forked_from_polars():
        raise FreqlabError(
            f"cannot write {out} from this process: it was forked from process {_PARENT['pid']}, whose polars "
            "threads were running (fork copies no thread, so polars would wait for them forever); start the "
            "processes with multiprocessing.get_context('spawn') or 'forkserver', or scan here without an output "
            "folder (out=None)"
        )


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
