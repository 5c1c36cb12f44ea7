"""The one exception type users see: bad input or bad parameters, with a message naming the culprit."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import signal
import sys
import threading
from typing import NoReturn


class FreqlabError(ValueError):
    """A user-facing error: the CLI prints its message on one line and exits with status 1.

    Messages name the file, line or value at fault, e.g. ``lengths.parquet: not a freqlab histogram``.

    Parameters
    ----------
    message : str
        The one-line message shown to the user.

    Examples
    --------
    >>> try:
    ...     raise FreqlabError("lengths.parquet: not a freqlab histogram")
    ... except FreqlabError as error:
    ...     print(f"Error: {error}")
    Error: lengths.parquet: not a freqlab histogram
    """


class ParameterError(FreqlabError):
    """A :class:`FreqlabError` about one parameter's value in the light of what was computed from the others (STRING's
    ``W`` against the shift ``S`` planned for the window): the CLI shows it as a usage error naming ``option`` (exit
    2), as it shows a bad value it can check itself.

    >>> error = ParameterError("W = 4000 must be much smaller than S = 1408", "--W")
    >>> isinstance(error, FreqlabError), error.option
    (True, '--W')
    """

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.option = option

    def __reduce__(self):  # pickled from a worker process with its option (the default takes the message alone)
        return type(self), (str(self), self.option)


def brief(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for one-line messages that quote a value given by the user.

    >>> brief(list(range(100)), 20)
    '[0, 1, 2, 3, 4, 5, …'
    """
    try:
        text = repr(value)
    except ValueError:  # an int past Python's 4,300-digit limit on conversion to text
        text = f"an integer of {value.bit_length():,} bits"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def brief_line(message: str, limit: int = 300) -> str:
    r"""A multi-line message as one line (its lines joined), cut to ``limit`` characters: a first line that ends in
    "one of:" names nothing without the next.

    >>> brief_line("Couldn't instantiate the backend tokenizer from one of:\n(1) a file\n(2) a slow tokenizer", 70)
    "Couldn't instantiate the backend tokenizer from one of: (1) a file (2…"
    """
    text = " ".join(message.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cannot_write(path: object, exc: Exception) -> FreqlabError:
    """``PATH: cannot write (No such file or directory)``: one line naming the file, for an output that failed
    (writers that wrap the OS error, like polars, say "(os error N)"; a full disk says what to do).
    """
    code = getattr(exc, "errno", None)
    found = re.search(r"\(os error (\d+)\)", str(exc))
    if code is None and found:
        code = int(found.group(1))
    if code == errno.ENOSPC:
        reason = "no space left on the device; free some space or choose another --out"
    elif isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    elif code is not None:
        reason = os.strerror(code)
    else:
        text = str(exc).strip().splitlines()
        reason = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return FreqlabError(f"{path}: cannot write ({reason})")


def describe_os_error(exc: OSError) -> str:
    """An OSError in one line naming its file: ``/proc/x.png: No such file or directory`` (not ``[Errno 2] ...``)."""
    if exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


INTERRUPTED = 130  # the shell's status for a command stopped by Ctrl-C (128 + SIGINT)
TERMINATED = 143  # ... and by SIGTERM (128 + SIGTERM)
BROKEN_PIPE = 141  # ... and by SIGPIPE (128 + SIGPIPE): the reader of its output closed the pipe


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C (the command line keeps a scan's checkpoints and says so in one line), but
    exiting with status 143.
    """


#: set by the command line's SIGTERM handler: a library that catches the :class:`Terminated` it raises and raises a
#: KeyboardInterrupt of its own (Ray's ``ray.wait`` and ``ray.get`` do) still ends the command with 143 (a review)
SIGTERM_RECEIVED = False


def terminate(signum=None, frame=None) -> NoReturn:
    """The command line's SIGTERM handler: :class:`Terminated`, remembered in :data:`SIGTERM_RECEIVED`."""
    global SIGTERM_RECEIVED
    SIGTERM_RECEIVED = True
    raise Terminated


def exit_status(interrupt: BaseException) -> int:
    """The exit status of an interrupted command: 130 for Ctrl-C, 143 for SIGTERM."""
    return TERMINATED if isinstance(interrupt, Terminated) or SIGTERM_RECEIVED else INTERRUPTED


def interrupt_of(error: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or SIGTERM) behind ``error``: itself, or the one a compiled (numba) call was running when it
    came, which then reaches Python wrapped in a SystemError; None for any other error.
    """
    if isinstance(error, KeyboardInterrupt):
        return error
    cause = error.__cause__ or error.__context__
    return cause if isinstance(error, SystemError) and isinstance(cause, KeyboardInterrupt) else None


#: seconds an interrupted command may take to exit before it is ended at once (see :func:`end_within_grace`)
EXIT_GRACE = 5.0


def end_within_grace(status: int) -> NoReturn:
    """``sys.exit(status)`` for the program itself (never a command run in-process, as tests do), ended at once
    after :data:`EXIT_GRACE` seconds if the interpreter's exit waits on a thread that never ends (a process pool's
    manager thread can wait forever for the rest of a result its worker was killed while sending).

    Ctrl-C and SIGTERM are ignored from here on: a second one would cut short the exit's wait for the threads still
    running, and a thread inside a backend's native code (a tokenizer being built) is then killed when it comes back
    to Python, which aborts the process ("FATAL: exception not rethrown"). The grace bounds the wait instead.
    """
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)

    def end_now() -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)  # nothing else: this runs beside a stuck exit, so it must not wait on any lock

    # requests still under way on fsspec's event loop (an interrupted remote listing) are dropped with the loop:
    # asyncio would log "Task was destroyed but it is pending!" for each after the one-line message
    logging.getLogger("asyncio").disabled = True
    timer = threading.Timer(EXIT_GRACE, end_now)
    timer.daemon = True  # not joined at exit: it runs while the interpreter waits on the other threads
    timer.start()
    sys.exit(status)
