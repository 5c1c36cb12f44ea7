"""Shards one after the other in this process: no pickling, no workers (``workers=1``)."""

from __future__ import annotations

from collections.abc import Generator, Iterator

from freqlab.scan.engines.base import Engine, Progress, Task


class InProcessEngine(Engine):
    """Runs every task in this process, one after the other."""

    name = "local"
    workers = 1

    def run(self, tasks: Iterator[Task], job, progress: Progress | None = None) -> Generator[tuple, None, None]:
        """Run ``job`` on each task in turn; yield the results."""
        for task in tasks:
            yield task.index, job(task.shard, task.options, progress)
