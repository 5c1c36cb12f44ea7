"""Where the per-shard work runs: in this process, in a local process pool, or as Ray tasks.

Every engine takes an iterator of :class:`Task` (pulled lazily, so the driver can tighten limits as results
come in) and yields ``(task.index, ShardCount)`` as shards finish, in any order. All of them run the same
:func:`freqlab.scan.work.count_shard`; merging is the driver's job. Closing the generator early (a limit was
reached, an error, Ctrl-C) cancels what is queued and stops what runs.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass

from freqlab.errors import FreqlabError
from freqlab.scan.counts import ShardCount
from freqlab.scan.work import ShardOptions, count_shard

ENGINES = ("local", "ray")
MP_CONTEXT = "forkserver"  # see _context()
RAY_PROBE_SECONDS = 3.0  # how long check_ray_address waits for a TCP connection
RAY_OBJECT_STORE_BYTES = 80 * 2**20  # a scan moves only small partial histograms through the store

Progress = Callable[[int, int], None]  # (documents, tokens) done since the last call


@dataclass(frozen=True)
class Task:
    """One shard to count: its position, the shard itself and the options (with this shard's caps)."""

    index: int  # position of the shard in the corpus's shard order
    shard: object
    options: ShardOptions


def default_workers() -> int:
    """All cores this process may use."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _fill(in_flight: dict, tasks: Iterator[Task], window: int, submit: Callable[[Task], object]) -> None:
    """Submit tasks until ``window`` are in flight or none are left; ``in_flight`` maps handle -> shard index."""
    while len(in_flight) < window:
        task = next(tasks, None)
        if task is None:
            return
        in_flight[submit(task)] = task.index


def _single_threaded_tokenizer() -> None:
    """One task per core already: keep a Hugging Face backend's Rayon pool to one thread (no oversubscription)."""
    os.environ.setdefault("RAYON_NUM_THREADS", "1")


# --- in-process ------------------------------------------------------------------------------------------
def run_in_process(tasks: Iterator[Task], counter, progress: Progress | None = None) -> Iterator[tuple]:
    """Run shards one after the other in this process (workers=1: simplest to debug and profile)."""
    for task in tasks:
        yield task.index, count_shard(task.shard, counter, task.options, progress)


# --- worker-side state of the process pool ----------------------------------------------------------------
# The counter travels pickled (its raw ranks / tokenizer.json text, see freqlab.tokenize.counter): a worker
# needs neither the tokenizer file nor the hub, and builds its encoder once.
_COUNTER = None
_QUEUE = None


class _QueueReporter:
    """Sends (documents, tokens) progress to the driver at most every 0.2 s."""

    def __init__(self, queue) -> None:
        self.queue, self.docs, self.tokens, self.last = queue, 0, 0, time.monotonic()

    def __call__(self, docs: int, tokens: int) -> None:
        self.docs += docs
        self.tokens += tokens
        if time.monotonic() - self.last > 0.2:
            self.flush()

    def flush(self) -> None:
        if self.docs or self.tokens:
            self.queue.put((self.docs, self.tokens))
            self.docs = self.tokens = 0
        self.last = time.monotonic()


def _pool_init(counter, queue) -> None:
    global _COUNTER, _QUEUE
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    _single_threaded_tokenizer()
    _COUNTER, _QUEUE = counter, queue


def _pool_count(shard, options: ShardOptions) -> ShardCount:
    reporter = _QueueReporter(_QUEUE) if _QUEUE is not None else None
    part = count_shard(shard, _COUNTER, options, reporter)
    if reporter is not None:
        reporter.flush()
    return part


# --- local process pool ------------------------------------------------------------------------------------
def _context():
    """'forkserver' where available: workers fork from a clean single-threaded server process that has
    already imported freqlab (fast start-up, reused across scans); else 'spawn'. Never plain 'fork': forking
    a driver whose tokenizer already started Rayon/numba threads can deadlock."""
    if MP_CONTEXT in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context(MP_CONTEXT)
        context.set_forkserver_preload(["freqlab.scan.engines", "freqlab.corpus", "freqlab.tokenize"])
        return context
    return multiprocessing.get_context("spawn")


def prestart() -> threading.Thread:
    """Start the forkserver (it imports freqlab, ~0.5 s) in the background while the driver loads the
    tokenizer; join the returned thread before starting a pool."""

    def start() -> None:
        with _main_module_hidden():
            if _context().get_start_method() == "forkserver":
                from multiprocessing import forkserver

                forkserver.ensure_running()

    thread = threading.Thread(target=start, name="freqlab-forkserver", daemon=True)
    thread.start()
    return thread


def run_local(tasks: Iterator[Task], counter, workers: int, progress: Progress | None = None) -> Iterator[tuple]:
    """Spread shards over ``workers`` processes (one tokenizer each); at most 2 shards per worker queued."""
    context = _context()
    queue = context.Queue() if progress is not None else None
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_pool_init, initargs=(counter, queue))
    in_flight: dict[Future, int] = {}
    tasks = iter(tasks)

    def submit() -> None:
        _fill(in_flight, tasks, 2 * workers, lambda task: pool.submit(_pool_count, task.shard, task.options))

    finished = False
    try:
        with _main_module_hidden():  # the first submit starts the workers
            submit()
        while in_flight:
            done, _ = wait(in_flight, timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(queue, progress)
            for future in done:
                index = in_flight.pop(future)
                yield index, future.result()
            submit()
        finished = True
    finally:
        _drain(queue, progress)
        _stop(pool, kill=not finished)
        if queue is not None:
            queue.close()
            queue.cancel_join_thread()


@contextlib.contextmanager
def _main_module_hidden():
    """Start workers without re-running the caller's ``__main__`` script in them.

    'spawn' and 'forkserver' workers normally import the parent's main script, so a plain script calling
    ``scan()`` without an ``if __name__ == "__main__":`` guard would scan again in every worker (and fail).
    Workers here only need freqlab's own functions and the corpus's shards, which pickle by reference to
    freqlab modules, so the main module is hidden while they start.
    """
    main = sys.modules.get("__main__")
    saved = {name: getattr(main, name) for name in ("__file__", "__spec__") if hasattr(main, name)}
    try:
        if "__file__" in saved:
            del main.__file__
        if "__spec__" in saved:
            main.__spec__ = None
        yield
    finally:
        for name, value in saved.items():
            setattr(main, name, value)


def _drain(queue, progress: Progress | None) -> None:
    if queue is None or progress is None:
        return
    while True:
        try:
            docs, tokens = queue.get_nowait()
        except Exception:  # queue.Empty, or a queue closed under us
            return
        progress(docs, tokens)


def _stop(pool: ProcessPoolExecutor, kill: bool) -> None:
    """Shut the pool down; when stopping early, terminate running workers instead of waiting for them."""
    processes = list(getattr(pool, "_processes", {}).values()) if kill else []  # no public API for this
    pool.shutdown(wait=not kill, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)


# --- Ray ---------------------------------------------------------------------------------------------------
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


def _ray_count(counter, shard, options: ShardOptions) -> ShardCount:
    _single_threaded_tokenizer()
    return count_shard(shard, counter, options)


def run_ray(
    tasks: Iterator[Task],
    counter,
    workers: int | None,
    address: str | None = None,
    progress: Progress | None = None,
    object_store_memory: int = RAY_OBJECT_STORE_BYTES,
) -> Iterator[tuple]:
    """Run shards as Ray tasks: on a Ray instance started here (``workers`` CPUs) unless ``address`` points
    to a running cluster (or Ray is already initialised in this process). Progress advances per shard."""
    ray = import_ray()
    owns = False
    if not ray.is_initialized():
        check_ray_address(address)
        common = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": False}
        try:
            if address:
                ray.init(address=address, **common)
            else:
                ray.init(num_cpus=workers or default_workers(), object_store_memory=object_store_memory, **common)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise FreqlabError(f"could not start or reach {where}: {str(exc).splitlines()[0]}") from None
        owns = True
    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_count)
    counter_ref = ray.put(counter)  # shipped once, shared by every task
    window = 2 * max(int(ray.cluster_resources().get("CPU", 1)), 1)
    in_flight: dict = {}
    tasks = iter(tasks)

    def submit() -> None:
        _fill(in_flight, tasks, window, lambda task: remote.remote(counter_ref, task.shard, task.options))

    try:
        submit()
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.5)
            for ref in ready:
                index = in_flight.pop(ref)
                try:
                    part = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # re-raise the worker's own error, not Ray's wrapper
                    cause = getattr(exc, "cause", None)
                    raise (cause if isinstance(cause, Exception) else exc) from None
                if progress is not None:
                    progress(part.documents_read, part.tokens)
                yield index, part
            submit()
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        if owns:
            ray.shutdown()
