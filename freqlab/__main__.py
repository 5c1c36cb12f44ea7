"""``python -m freqlab`` and the ``freqlab`` console script.

:func:`run` takes over Ctrl-C and SIGTERM before anything heavy is imported, so an interrupt at any moment is one
line and exit status 130 (Ctrl-C) or 143 (SIGTERM), never a traceback.

An interrupt can land while Python runs code that cannot pass an exception on (a weakref callback inside the import
system, a ``__del__``): Python then prints "Exception ignored" and carries on as if nothing had been pressed.
:func:`_redeliver` catches those and raises the same signal again a moment later, in the main flow.
"""

from __future__ import annotations

import _thread
import gc
import os
import signal
import sys
import threading

from freqlab.errors import (
    INTERRUPTED,
    TERMINATED,
    Terminated,
    end_within_grace,
    exit_status,
    interrupt_of,
    terminate,
)

_print_unraisable = sys.unraisablehook


def _redeliver(unraisable) -> None:
    """``sys.unraisablehook``: an interrupt swallowed where it could not propagate is delivered again."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        signum = signal.SIGTERM if isinstance(unraisable.exc_value, Terminated) else signal.SIGINT
        threading.Timer(0.01, _thread.interrupt_main, (signum,)).start()
        return
    _print_unraisable(unraisable)


def leave_to_the_system() -> None:
    """The command is done: what it made dies with the process, so Python's exit need not look for cycles in it.

    The exit would run the cyclic collector over every object still alive (numba's, polars', the tokenizer's):
    0.20-0.30 s at the end of a scan, two thirds of it in the collector (``perf``; ``scripts/bench_scan_1g.md``).
    Frozen (:func:`gc.freeze`), they are freed by reference counting as modules are cleared, and whatever sits in
    a cycle by the operating system. atexit handlers (the scan's temporary files, ``weakref.finalize``) and the
    flush of stdout and stderr run as before; every file a command writes is closed before it returns.
    """
    gc.freeze()


def idle_blas_threads_sleep(command: str | None = None) -> None:
    """numpy's OpenBLAS threads go to sleep at once when idle, unless the environment says otherwise.

    OpenBLAS starts a thread per core when numpy is imported, and each spins, waiting for work, for 2^28 cycles
    (its default ``OPENBLAS_THREAD_TIMEOUT``) before it sleeps: ~0.1 core-second per process that imports numpy
    (``python -c 'import numpy'``: 0.14 s of CPU against 0.04 s with the timeout at 2^4 cycles), spent on the other
    core while a scan starts (the driver, the pool's forkserver: ``perf`` showed ``blas_thread_server`` on 0.14 s of a
    193 MiB scan's start-up). freqlab's numpy work does not wait on BLAS, and BLAS work still runs on every core;
    set before numpy is imported, and inherited by the scan's forkserver and workers. Not for ``probe``
    (``command``): it runs a model, and a torch built on OpenBLAS (aarch64) reads the same variable, where each
    matrix product would wake sleeping threads. A library caller's process is left alone.
    """
    if command != "probe":
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


def run() -> None:
    """The command line (see :mod:`freqlab.cli`)."""
    sys.unraisablehook = _redeliver
    signal.signal(signal.SIGTERM, terminate)
    idle_blas_threads_sleep(sys.argv[1] if len(sys.argv) > 1 else None)
    try:
        from freqlab.cli import main_entry

        try:
            main_entry()
        finally:
            leave_to_the_system()
        return
    except (KeyboardInterrupt, SystemError) as error:
        interrupt = interrupt_of(error)
        if interrupt is None:
            raise
        sys.stderr.write("\ninterrupted\n")
        status = exit_status(interrupt)
    except SystemExit as done:  # a command that reported its own interrupt (the scan names its checkpoints)
        if done.code not in (INTERRUPTED, TERMINATED):
            raise
        status = done.code
    end_within_grace(status)


if __name__ == "__main__":
    run()
