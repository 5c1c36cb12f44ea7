"""Ray tasks: the same job on a Ray instance started here, or on the cluster at ``address``.

``pip install 'freqlab[ray]'``. The job (and with it the tokenizer) is put in the object store once and shared by
every task; a task returns a shard's small partial histogram.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

from freqlab.errors import FreqlabError
from freqlab.scan.engines.base import Engine, Progress, Task, default_workers, fill

RAY_PROBE_SECONDS = 3.0  # how long check_ray_address waits for a TCP connection
RAY_OBJECT_STORE_BYTES = 80 * 2**20  # a scan moves only small partial histograms through the store


def import_ray():
    """The ``ray`` module, or a one-line FreqlabError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise FreqlabError("the Ray engine needs Ray: pip install 'freqlab[ray]'") from None
    return ray


def check_ray_address(address: str | None, timeout: float = RAY_PROBE_SECONDS) -> None:
    """Raise a one-line FreqlabError within ``timeout`` s when a ``host:port`` address takes no TCP connection.

    ``ray.init`` retries an unreachable GCS for ~25 s while logging C++ errors on stderr; a plain TCP
    connect fails fast with a clear reason. Other forms (``auto``, ``local``, ``ray://...``) are passed
    through to Ray, which resolves them itself.
    """
    if not address or "://" in address or address in ("auto", "local"):
        return
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise FreqlabError(f"Ray address {address!r}: expected HOST:PORT (e.g. 10.0.0.1:6379), 'auto' or ray://HOST:PORT")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        reason = f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError) else exc.strerror or exc
        raise FreqlabError(
            f"cannot reach the Ray cluster at {address} ({reason}); start one there with "
            "`ray start --head --port PORT`, check the address, or drop --address to run a local Ray"
        ) from None


def _ray_count(job, shard, options):
    job.setup()
    return job(shard, options)


class RayEngine(Engine):
    """Shards as Ray tasks: on a Ray instance started here (``workers`` CPUs) unless ``address`` points to a
    running cluster (or Ray is already initialised in this process). Progress advances per shard."""

    name = "ray"

    def __init__(self, workers: int | None, address: str | None = None,
                 object_store_memory: int = RAY_OBJECT_STORE_BYTES) -> None:
        self.workers = int(workers or default_workers())
        self.address = address
        self.object_store_memory = object_store_memory

    @staticmethod
    def check(address: str | None) -> None:
        """Fail at once when Ray is missing or the cluster at ``address`` does not answer."""
        import_ray()
        check_ray_address(address)

    def run(self, tasks: Iterator[Task], job, progress: Progress | None = None) -> Iterator[tuple]:
        ray = import_ray()
        owns = False
        if not ray.is_initialized():
            common = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": False}
            try:
                if self.address:
                    ray.init(address=self.address, **common)
                else:
                    ray.init(num_cpus=self.workers, object_store_memory=self.object_store_memory, **common)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = f"the Ray cluster at {self.address}" if self.address else "a local Ray instance"
                raise FreqlabError(f"could not start or reach {where}: {str(exc).splitlines()[0]}") from None
            owns = True
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_count)
        job_ref = ray.put(job)  # shipped once, shared by every task
        window = 2 * max(int(ray.cluster_resources().get("CPU", 1)), 1)
        in_flight: dict = {}
        tasks = iter(tasks)

        def submit() -> None:
            fill(in_flight, tasks, window, lambda task: remote.remote(job_ref, task.shard, task.options))

        try:
            submit()
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.5)
                for ref in ready:
                    task = in_flight.pop(ref)
                    try:
                        part = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:  # re-raise the worker's own error, not Ray's wrapper
                        cause = getattr(exc, "cause", None)
                        raise (cause if isinstance(cause, Exception) else exc) from None
                    if progress is not None:
                        progress(part.documents_read, part.tokens)
                    yield task.index, part
                submit()
        finally:
            for ref in in_flight:
                ray.cancel(ref, force=True)
            if owns:
                ray.shutdown()
