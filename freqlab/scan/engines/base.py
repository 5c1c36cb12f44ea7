"""What every engine shares: the task, the engine interface, the submission window, the worker count."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from freqlab.scan.work import ShardOptions

Progress = Callable[[int, int, int], None]  # (documents, tokens, bytes read) done since the last call


@dataclass(frozen=True)
class Task:
    """One shard to count: its position, the shard itself and the options (with this shard's caps)."""

    index: int  # position of the shard in the corpus's shard order
    shard: Any
    options: ShardOptions


class Engine:
    """Runs a job on tasks; :meth:`run` yields ``(index, ShardCount)`` as shards finish (a generator: the driver
    closes it when it stops early).
    """

    name: str = ""
    workers: int = 1
    reason: str | None = None  # why this engine, when freqlab chose it (the summary says it)

    def run(self, tasks: Iterator[Task], job, progress: Progress | None = None) -> Generator[tuple, None, None]:
        """Run ``job`` on each task; yield the results as they finish."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What ran where, for the summary."""
        return {"engine": self.name, "workers": self.workers, **({"engine_reason": self.reason} if self.reason else {})}


def default_workers() -> int:
    """All cores this process may use; 1 in a daemonic process (a ``multiprocessing.Pool`` worker), which may not
    start the pool's processes (it counts on its own threads).
    """
    if may_not_start_processes():
        return 1
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def may_not_start_processes() -> bool:
    """Whether this process is a daemonic ``multiprocessing`` process, which multiprocessing forbids to start any."""
    import multiprocessing

    return bool(multiprocessing.current_process().daemon)


def fill(in_flight: dict, tasks: Iterator[Task], window: int, submit: Callable[[Task], object]) -> None:
    """Submit tasks until ``window`` are in flight or none are left; ``in_flight`` maps handle -> task."""
    while len(in_flight) < window:
        task = next(tasks, None)
        if task is None:
            return
        in_flight[submit(task)] = task
