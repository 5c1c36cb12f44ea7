"""``python -m freqlab`` and the ``freqlab`` console script.

:func:`run` takes over Ctrl-C and SIGTERM before anything heavy is imported, so an interrupt at any moment is one
line and exit status 130 (Ctrl-C) or 143 (SIGTERM), never a traceback.
"""

from __future__ import annotations

import signal
import sys

from freqlab.errors import Terminated, exit_status


def _terminate(signum, frame) -> None:
    raise Terminated


def run() -> None:
    """The command line (see :mod:`freqlab.cli`)."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        from freqlab.cli import main_entry

        main_entry()
    except KeyboardInterrupt as interrupt:
        sys.stderr.write("\ninterrupted\n")
        sys.exit(exit_status(interrupt))


if __name__ == "__main__":
    run()
