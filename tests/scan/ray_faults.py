"""Faults for the Ray cluster tests: a stand-in for the engine's task that blocks where a test says.

Used in the test process and in a driver subprocess (``python -c``, with this folder on ``sys.path``).
"""

from __future__ import annotations


def blocking_task(*, node_id: str | None = None, shard_ids=(), signal_dir: str | None = None):
    """A stand-in for ``freqlab.scan.engines.ray._ray_count`` that, on node ``node_id`` or for a shard in
    ``shard_ids``, drops a file in ``signal_dir`` (so the test knows a task is stuck there) and sleeps for 10
    minutes; anywhere else it is the real task. A closure, so cloudpickle ships its code to the workers by value
    (the workers cannot import this test module)."""
    blocked = frozenset(shard_ids)

    def task(job_refs, shard, options):
        import os
        import time

        import ray

        from freqlab.scan.engines.ray import _ray_count  # the worker's own, unpatched task

        if ray.get_runtime_context().get_node_id() == node_id or shard.id in blocked:
            if signal_dir is not None:
                open(os.path.join(signal_dir, f"blocked-{os.getpid()}"), "w").close()
            time.sleep(600)
        return _ray_count(job_refs, shard, options)

    return task


def crashing_task(*, shard_ids=()):
    """A stand-in for the engine's task whose worker process dies (``os._exit``) on the shards in
    ``shard_ids``, every time; anywhere else it is the real task."""
    crashing = frozenset(shard_ids)

    def task(job_refs, shard, options):
        import os

        from freqlab.scan.engines.ray import _ray_count

        if shard.id in crashing:
            os._exit(1)
        return _ray_count(job_refs, shard, options)

    return task


def patch_and_scan(arguments: list[str], shard_ids: list[str], signal_dir: str) -> None:
    """``freqlab scan ARGUMENTS`` in this process, with the shards in ``shard_ids`` blocking (a driver
    subprocess the test kills)."""
    import freqlab.scan.engines.ray as engine
    from freqlab.cli import main

    engine._ray_count = blocking_task(shard_ids=shard_ids, signal_dir=signal_dir)
    main(["scan", *arguments])
