"""Where the per-shard work runs: in this process, in a local process pool, or as Ray tasks.

Every engine runs a job (:class:`freqlab.scan.work.CountJob`) on :class:`Task` s pulled lazily from an iterator
(so the driver can tighten limits as results come in) and yields ``(task.index, ShardCount)`` as shards finish,
in any order. Engines know nothing of tokenizers or formats; merging is the driver's job. Closing the generator
early (a limit was reached, an error, Ctrl-C) cancels what is queued and stops what runs.

=========  ==========================================================================================
engine     runs shards
=========  ==========================================================================================
in-process one after the other in this process (``workers=1``, or a scan too small to repay a pool's start-up)
local      in ``workers`` processes started from a forkserver (:mod:`.local`)
ray        as Ray tasks, on a local Ray instance or a cluster (:mod:`.ray`)
=========  ==========================================================================================
"""

from __future__ import annotations

from freqlab.errors import FreqlabError
from freqlab.scan.engines.base import Engine, Task, default_workers, may_not_start_processes
from freqlab.scan.engines.inprocess import InProcessEngine
from freqlab.scan.engines.local import LocalEngine
from freqlab.scan.settings import ENGINES

__all__ = ["ENGINES", "Engine", "InProcessEngine", "LocalEngine", "Task", "default_workers", "make_engine"]


def make_engine(name: str, workers: int | None, pending: int, address: str | None = None) -> Engine:
    """The engine called ``name`` for ``pending`` shards: ``local`` with one worker (or one shard) runs in
    this process; ``ray`` is imported only when asked for.
    """
    if name == "ray":
        from freqlab.scan.engines.ray import RayEngine

        return RayEngine(workers, address)
    count = min(workers or default_workers(), max(pending, 1))
    if count > 1 and may_not_start_processes():
        raise FreqlabError(
            f"workers={workers}: this process is a daemonic multiprocessing process (a multiprocessing.Pool's worker "
            "is one), which may not start processes; scan with workers=1 here (the default), or run the scans in a "
            "concurrent.futures.ProcessPoolExecutor, whose workers may"
        )
    require_worker_memory(workers, pending)
    return InProcessEngine() if count <= 1 else LocalEngine(count)


def require_worker_memory(workers: int | None, pending: int) -> None:
    """A FreqlabError when the local pool of ``workers`` (None: every core) for ``pending`` shards would not fit
    in the memory available (:data:`WORKER_BYTES` a process); the driver asks before it touches ``--out`` too.
    """
    count = min(workers or default_workers(), max(pending, 1))
    if count > 1:
        from freqlab.resources import require_memory

        require_memory(
            count * WORKER_BYTES,
            f"--workers {workers:,}" if workers else "--workers (all cores)",
            f"{count:,} worker processes for {pending:,} shards, ~{WORKER_BYTES >> 20} MB each",
        )


#: memory of one local worker process beyond what it shares with the others (measured: 48-59 MB proportional set
#: size with the built-in tokenizer; a large tokenizer adds its own)
WORKER_BYTES = 64 << 20
