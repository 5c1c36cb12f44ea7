"""Memory and time a computation will need, checked before it starts.

Every option whose size is not bounded by its syntax (a window L, Megatron's ``--train-samples``, HARPE's candidate
grid, ...) is estimated before any of its arrays is allocated; :func:`require_memory` refuses in one line naming the
option when the estimate exceeds the memory available (``MemAvailable`` of ``/proc/meminfo``, else the free physical
pages), :func:`require_time` when a compute-bound search would take longer than :data:`MAX_SECONDS`. The environment
variables ``FREQLAB_MEMORY_BYTES`` and ``FREQLAB_MAX_SECONDS`` set both limits (tests, shared machines).

A MemoryError that slips past the estimates is reported as what was being done (:func:`doing`), not as a guess
at its cause.

>>> import os; os.environ["FREQLAB_MEMORY_BYTES"] = "1000000"
>>> require_memory(10 * 2**20, "--L 1M", "f(i)")
Traceback (most recent call last):
...
freqlab.resources.ResourceError: --L 1M needs ~10.5 MB of memory (f(i)), more than the 1.0 MB available
>>> del os.environ["FREQLAB_MEMORY_BYTES"]
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from fractions import Fraction

from freqlab.errors import FreqlabError

MEMORY_ENV = "FREQLAB_MEMORY_BYTES"
SECONDS_ENV = "FREQLAB_MAX_SECONDS"
#: the longest a compute-bound planner (HARPE's searches) may be estimated to run before it is refused
MAX_SECONDS = 3600.0


class ResourceError(FreqlabError):
    """A computation refused before it starts: it would need more memory (or time) than the machine has."""


def _env_number(name: str, value: str, unit: str) -> int:
    """A limit set in the environment: a positive finite number (``2e9`` too), else one line naming the variable."""
    try:
        number = float(value)
        if not 1 <= number < float(2**63):  # NaN fails too
            raise ValueError
    except ValueError:
        raise FreqlabError(f"{name}={value!r}: expected a positive number of {unit}") from None
    return int(number)


def available_memory() -> int | None:
    """Bytes of memory available to a new computation: ``$FREQLAB_MEMORY_BYTES`` when set, else ``MemAvailable``
    of ``/proc/meminfo``, else free physical pages (``os.sysconf``); None where none can be known.
    """
    override = os.environ.get(MEMORY_ENV, "").strip()
    if override:
        return _env_number(MEMORY_ENV, override, "bytes")
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return None


def human_bytes(n: float) -> str:
    """``12.8 GB`` (decimal units, as ``free -h --si``).

    >>> human_bytes(12.8e9), human_bytes(512), human_bytes(3.2e15), human_bytes(3.2e20), human_bytes(10**400)
    ('12.8 GB', '512 B', '3.2 PB', '3.2e+05 PB', 'more than 1e+300 PB')
    """
    n = Fraction(n) if isinstance(n, int) else n  # an int past float64 (1e400 bytes: a review's traceback)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000:
            return f"{float(n):.0f} {unit}" if unit == "B" else f"{float(n):.1f} {unit}"
        n /= 1000
    if abs(n) < 1000:
        return f"{float(n):.1f} PB"
    return f"{float(n):.2g} PB" if abs(n) < 1e300 else "more than 1e+300 PB"


def binary_bytes(n: float) -> str:
    """A size of text as the scan reports print it: KiB below 1 MiB, one decimal below 10 MiB, then whole MiB (one
    rounding everywhere, so that two lines of one report agree).

    >>> binary_bytes(44_000), binary_bytes(1.49 * 2**20), binary_bytes(30.2 * 2**20), binary_bytes(100 * 2**30)
    ('43 KiB', '1.5 MiB', '30 MiB', '102,400 MiB')
    """
    if n < 2**10:
        return f"{n:.0f} B"
    if n < 2**20:
        return f"{n / 2**10:.0f} KiB"
    return f"{n / 2**20:.1f} MiB" if n < 10 * 2**20 else f"{n / 2**20:,.0f} MiB"


def require_memory(needed: float, option: str, purpose: str) -> None:
    """Refuse (ResourceError) when ``needed`` bytes exceed :func:`available_memory`: ``option`` names the option and
    its value (``"--L 268,435,456"``), ``purpose`` what the memory is for (``"f(i), 10 bytes per position"``).
    """
    available = available_memory()
    if available is not None and needed > available:
        raise ResourceError(
            f"{option} needs ~{human_bytes(needed)} of memory ({purpose}), more than the {human_bytes(available)} "
            "available"
        )


def require_time(seconds: float, option: str, purpose: str) -> None:
    """Refuse (ResourceError) when an estimated ``seconds`` exceed :data:`MAX_SECONDS` (or ``$FREQLAB_MAX_SECONDS``)."""
    value = os.environ.get(SECONDS_ENV, "").strip()
    limit = _env_number(SECONDS_ENV, value, "seconds") if value else MAX_SECONDS
    if seconds > limit:
        raise ResourceError(
            f"{option} would take ~{_duration(seconds)} ({purpose}), more than the {_duration(limit)} freqlab "
            f"allows (${SECONDS_ENV} sets it)"
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.3g} days"


@contextlib.contextmanager
def doing(what: str) -> Iterator[None]:
    """Run the block; a MemoryError inside (one the estimates did not foresee) becomes a ResourceError saying what
    was being done, e.g. ``out of memory while computing f(i) at --L 268435456``.
    """
    try:
        yield
    except MemoryError:
        raise ResourceError(f"out of memory while {what}") from None
