"""A local process pool: shards spread over ``workers`` processes, one job (tokenizer) per worker.

Workers fork from a forkserver, a clean single-threaded process that has already imported freqlab and built the
scan's cached tokenizer (:mod:`freqlab.tokenization.prebuild`): workers inherit both (fast start-up, reused across
scans), and receive the job pickled once. They never outlive the driver: each watches the driver's process id (and, on
Linux, asks the kernel for SIGKILL when its parent dies), so a driver killed with SIGKILL leaves nothing
running. Ctrl-C is the driver's: the forkserver and the workers start with SIGINT blocked, so an interrupt
never prints a traceback from them.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from freqlab import fastokens_ahead
from freqlab.errors import FreqlabError
from freqlab.scan.engines.base import Engine, Progress, Task, fill

MP_CONTEXT = "forkserver"  # see _context()
WATCH_SECONDS = 1.0  # how often a worker checks that the driver is alive
DEAD_WORKER_GRACE_SECONDS = 2.0  # a worker gone this long without the pool noticing: the pool is stuck (see run)


class LocalEngine(Engine):
    """Spread shards over ``workers`` processes; at most 2 shards per worker queued."""

    name = "local"

    def __init__(self, workers: int) -> None:
        self.workers = int(workers)

    def run(self, tasks: Iterator[Task], job, progress: Progress | None = None) -> Generator[tuple, None, None]:
        """Run ``job`` on the tasks in a pool of worker processes; yield the results as they finish."""
        context = _context()
        start_forkserver()
        queue = context.Queue() if progress is not None else None
        # the job (its tokenizer: megabytes) pickled once, not once per worker as initargs would be
        payload = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        pool = ProcessPoolExecutor(
            self.workers, mp_context=context, initializer=_pool_init, initargs=(payload, queue, os.getpid())
        )
        _guard_exit(pool)
        in_flight: dict[Future, Task] = {}
        tasks = iter(tasks)

        def submit() -> None:
            try:
                fill(
                    in_flight, tasks, 2 * self.workers, lambda task: pool.submit(_pool_count, task.shard, task.options)
                )
            except ConnectionError as exc:  # starting a worker: the forkserver gone, its pipe broken
                raise FreqlabError(
                    "the worker pool's forkserver process died (killed, or out of memory) before it started the "
                    f"workers ({type(exc).__name__}); finished shards are checkpointed: run again with --resume"
                ) from None

        finished = False
        dead_since: float | None = None
        try:
            with _main_module_hidden(), _interrupts_deferred():  # the first submit starts the workers
                submit()
            while in_flight:
                done, _ = wait(in_flight, timeout=0.2, return_when=FIRST_COMPLETED)
                _drain(queue, progress)
                for future in done:
                    part = future.result()
                    yield in_flight.pop(future).index, part
                if not done and _a_worker_died(pool):
                    # A worker killed while writing its result leaves half a message in the result pipe: the
                    # pool's manager thread then waits for the rest forever and never marks the pool broken.
                    dead_since = dead_since or time.monotonic()
                    if time.monotonic() - dead_since > DEAD_WORKER_GRACE_SECONDS:
                        raise BrokenProcessPool("a worker died and the pool did not notice")
                submit()
            finished = True
        except BrokenProcessPool:
            # from a result or from submit(): a pool whose worker died refuses new work too, and which of the two
            # sees it first is a race
            running = [task.shard.id for task in in_flight.values()]
            raise FreqlabError(
                "a worker process died (killed, or out of memory) while counting "
                f"{_shown(running)}; finished shards are checkpointed: run again with --resume"
            ) from None
        finally:
            _drain(queue, progress)
            _stop(pool, kill=not finished)
            if queue is not None:
                queue.close()
                queue.cancel_join_thread()


def _shown(ids: list[str]) -> str:
    return ", ".join(ids[:3]) + (f" (+{len(ids) - 3} more)" if len(ids) > 3 else "")


# --- worker side --------------------------------------------------------------------------------------------
_JOB = None
_QUEUE = None


class _QueueReporter:
    """Sends (documents, tokens, bytes) progress to the driver at most every 0.2 s."""

    def __init__(self, queue) -> None:
        self.queue, self.docs, self.tokens, self.bytes, self.last = queue, 0, 0, 0, time.monotonic()

    def __call__(self, docs: int, tokens: int, nbytes: int = 0) -> None:
        self.docs += docs
        self.tokens += tokens
        self.bytes += nbytes
        if time.monotonic() - self.last > 0.2:
            self.flush()

    def flush(self) -> None:
        if self.docs or self.tokens or self.bytes:
            self.queue.put((self.docs, self.tokens, self.bytes))
            self.docs = self.tokens = self.bytes = 0
        self.last = time.monotonic()


def _pool_init(payload: bytes, queue, driver: int) -> None:
    global _JOB, _QUEUE
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    die_with(driver)
    job = pickle.loads(payload)
    job.setup()
    _JOB, _QUEUE = job, queue


def _pool_count(shard, options):
    reporter = _QueueReporter(_QUEUE) if _QUEUE is not None else None
    part = _JOB(shard, options, reporter)
    if reporter is not None:
        reporter.flush()
    return part


def driver_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, killed but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone (or its pid recycled by another user's process)
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):  # no /proc (not Linux): os.kill said it runs
        return True


def die_with(driver: int) -> None:
    """End this process when the ``driver`` process ends, however it ends (SIGKILL included).

    A watchdog thread checks the driver every :data:`WATCH_SECONDS`. (The forkserver cannot be relied on: it
    exits only once every worker has closed its copy of the driver's "alive" pipe, that is, after the workers.)
    On Linux, PR_SET_PDEATHSIG also kills the worker at once if the forkserver goes first.
    """
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    def watch() -> None:
        while driver_alive(driver):
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="freqlab-watchdog", daemon=True).start()


# --- pool start-up -----------------------------------------------------------------------------------------
def _context():
    """'forkserver' where available: workers fork from a clean single-threaded server process that has
    already imported freqlab (fast start-up, reused across scans); else 'spawn'. Never plain 'fork': forking
    a driver whose tokenizer already started Rayon/numba threads can deadlock.
    """
    if MP_CONTEXT in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context(MP_CONTEXT)
        # fastokens_ahead and prebuild first: they build the scan's tokenizer on threads while the others import
        context.set_forkserver_preload(
            [
                "freqlab.fastokens_ahead",
                "freqlab.tokenization.prebuild",
                "freqlab.scan.engines.preload",
                "freqlab.scan.engines",
                "freqlab.corpus",
                "freqlab.tokenization",
            ]
        )
        return context
    return multiprocessing.get_context("spawn")


def start_forkserver(prebuild: Callable[[], str | os.PathLike | None] | None = None) -> None:
    """Start the forkserver (it imports freqlab, ~0.5 s) with SIGINT blocked: the mask is inherited by it and by
    every worker it forks, so Ctrl-C (which a terminal sends to the whole process group) reaches only the
    driver, even while they are still starting. Idempotent.

    ``prebuild()``: the tokenizer cache entry whose engines the forkserver builds before its first fork, so that
    every worker inherits them instead of building its own (:mod:`freqlab.tokenization.prebuild`; called only when
    the forkserver starts now, None: nothing to build).
    """
    with _main_module_hidden():
        if _context().get_start_method() != "forkserver":
            return
        from multiprocessing import forkserver, resource_tracker

        resource_tracker.ensure_running()  # first: starting it *unblocks* SIGINT in the calling thread
        with _sigint_blocked(), _FORKSERVER_LOCK:
            entry = prebuild() if prebuild is not None and not _forkserver_running() else None
            entry = os.fspath(entry) if entry is not None else None
            with _environment({PREBUILD_ENV: entry, FORKSERVER_ENV: "1"}):
                try:
                    forkserver.ensure_running()
                except ChildProcessError:  # one an ancestor started before this module was imported here
                    _forget_forkserver()
                    forkserver.ensure_running()


def _forkserver_running() -> bool:
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None) is not None  # no public API for this


def forget_inherited_forkserver() -> None:
    """In a process just forked, forget the parent's forkserver and the lock a parent's thread may have held.

    The parent's forkserver is the parent's child (waiting for it here fails, ``ChildProcessError``); forgotten, a
    pool here starts this process's own. (One an ancestor started before this module was imported is met by
    :func:`start_forkserver` and forgotten there.)
    """
    global _FORKSERVER_LOCK
    _FORKSERVER_LOCK = threading.Lock()
    if "multiprocessing.forkserver" in sys.modules and _forkserver_running():
        _forget_forkserver()


def _forget_forkserver() -> None:
    """Forget multiprocessing's forkserver (no public API for this; its fields are the same in 3.10-3.13)."""
    server = sys.modules["multiprocessing.forkserver"]._forkserver
    with contextlib.suppress(OSError):
        os.close(server._forkserver_alive_fd)  # this process's copy: the parent's forkserver lives on its own
    server._forkserver_alive_fd = server._forkserver_pid = server._forkserver_address = None
    server._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=forget_inherited_forkserver)


_FORKSERVER_LOCK = threading.Lock()
PREBUILD_ENV = fastokens_ahead.ENV  # the cache entry the forkserver builds
FORKSERVER_ENV = fastokens_ahead.FORKSERVER_ENV  # set in the forkserver freqlab starts: its preloads act there


@contextlib.contextmanager
def _environment(values: dict[str, str | None]):
    """Each name set to its value in this process's environment (so in processes started meanwhile), None: unset."""
    previous = {name: os.environ.pop(name, None) for name in values}
    os.environ.update({name: value for name, value in values.items() if value is not None})
    try:
        yield
    finally:
        for name, value in previous.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


def prestart(prebuild: Callable[[], str | os.PathLike | None] | None = None) -> threading.Thread:
    """:func:`start_forkserver` in the background while the driver loads the tokenizer; join the returned thread
    before starting a pool.
    """
    thread = threading.Thread(target=start_forkserver, args=(prebuild,), name="freqlab-forkserver", daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def _sigint_blocked():
    """SIGINT blocked in this thread while processes are started from it: they inherit the mask."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _interrupts_deferred():
    """Ctrl-C and SIGTERM held back while workers start: either would cut the pickled job on its way to a new
    worker, which then prints an UnpicklingError traceback. The signal is raised again, to its own handler,
    once the block ends. (A signal mask is not enough: a tokenizer's native threads may take the signal).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.signal(signum, lambda signum, frame: pending.append(signum)) for signum in held}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if pending:
            signal.raise_signal(pending[0])


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
            docs, tokens, nbytes = queue.get_nowait()
        except Exception:  # queue.Empty, or a queue closed under us
            return
        progress(docs, tokens, nbytes)


def _guard_exit(pool: ProcessPoolExecutor) -> None:
    """Keep the standard library's exit hook from printing a traceback after the pool stopped early.

    On Python 3.11 ``concurrent.futures``' exit hook (``_python_exit``, run by ``threading._shutdown``) and the
    pool's weakref callback wake its manager thread through a pipe, checking ``_closed`` without the lock that the
    manager thread holds while it closes that pipe: when an interrupt stops the pool just before the interpreter
    exits, the write can land on the closed pipe ("handle is closed", "Bad file descriptor") and Python prints a
    traceback after the one-line message. A wake-up sent to a pipe already closed has nothing left to wake, so
    that error is dropped (3.12 takes the lock itself).
    """
    wakeup = getattr(pool, "_executor_manager_thread_wakeup", None)  # no public API for this
    send = getattr(wakeup, "wakeup", None)
    if send is None:
        return

    def guarded() -> None:
        with contextlib.suppress(OSError, ValueError):
            send()

    wakeup.wakeup = guarded


def _stop(pool: ProcessPoolExecutor, kill: bool) -> None:
    """Shut the pool down; when stopping early, terminate running workers instead of waiting for them."""
    processes = list((getattr(pool, "_processes", None) or {}).values()) if kill else []  # no public API for this
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets both
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    pool.shutdown(wait=not kill, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
    if kill and manager is not None and writer is not None:
        _unblock_manager(manager, writer)


def _a_worker_died(pool: ProcessPoolExecutor) -> bool:
    try:
        return any(process.exitcode is not None for process in list((pool._processes or {}).values()))
    except (AttributeError, RuntimeError):  # no such attribute, or the dict changed while read
        return False


def _unblock_manager(thread: threading.Thread, writer, timeout: float = 10.0) -> None:
    """Free the pool's manager thread when it waits for the rest of a result that a killed worker half wrote.

    The standard library's manager thread reads results with a blocking ``recv()``; a worker killed in the middle
    of sending one (holding the result pipe's lock) leaves it waiting for bytes that no living process will send,
    and the interpreter, which joins that thread at exit, would hang. Once every worker is gone, zero bytes are
    written into the result pipe until the read completes: what it decodes is garbage, so the manager thread
    marks the (already stopped) pool broken and exits. Nothing is sent unless the thread sits in that read.
    """
    thread.join(timeout=0.5)
    deadline = time.monotonic() + timeout
    zeros = bytes(1 << 16)
    while thread.is_alive() and _reading_a_result(thread) and time.monotonic() < deadline:
        try:
            os.set_blocking(writer.fileno(), False)
            os.write(writer.fileno(), zeros)
        except OSError:  # full (the thread reads it next) or closed (the thread is leaving)
            pass
        thread.join(timeout=0.05)


def _reading_a_result(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "recv" and frame.f_code.co_filename.endswith(
            os.path.join("multiprocessing", "connection.py")
        ):
            return True
        frame = frame.f_back
    return False
