"""f(i) in 8 bytes per position: two in-place suffix sums, chunked spreads and cumulative masses, each against
the plain computation it replaces, and the peak memory of a window against the estimate the commands check."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import freqlab.frequency.regimes as regimes
import freqlab.frequency.stats as stats
from freqlab.frequency.position import position_frequency
from freqlab.frequency.regimes import BYTES_PER_POSITION


def brute_force(lengths, counts, L: int) -> np.ndarray:
    """f(i) = Σ_s max(|s| - i, 0) over segments no longer than L (natural: a document splits into L-pieces)."""
    f = np.zeros(L, dtype=np.int64)
    for n, c in zip(lengths, counts):
        pieces = [L] * (n // L) + ([n % L] if n % L else [])
        for piece in pieces:
            f[:piece] += c * (piece - np.arange(piece))
    return f


@pytest.mark.parametrize("L", [1, 2, 7, 64, 1000])
def test_two_suffix_sums_give_the_brute_force_f(L):
    rng = np.random.default_rng(L)
    lengths = rng.integers(1, 3 * L + 2, 40)
    counts = rng.integers(0, 1000, 40)
    assert position_frequency(lengths, counts, L, "natural").tolist() == brute_force(lengths, counts, L).tolist()


def test_uniform_spread_taken_a_chunk_at_a_time_is_the_whole_spread(monkeypatch):
    L, tokens = 1000, 1000 * 1001 // 2 * 3 + 123_457  # three sweeps and a remainder spread over lengths
    whole = position_frequency([tokens], [1], L, "uniform")
    monkeypatch.setattr(regimes, "_SPREAD_CHUNK", 7)
    assert position_frequency([tokens], [1], L, "uniform").tolist() == whole.tolist()
    assert int(whole[0]) == tokens  # the budget is exact


@pytest.mark.parametrize("fraction", [0.001, 0.5, 0.9, 1.0])
def test_position_at_mass_by_chunks_is_the_plain_cumulative_search(monkeypatch, fraction):
    f = position_frequency([5000, 300, 70], [3, 10, 100], 4096, "natural")
    cumulative = np.cumsum(f.astype(object))
    target = -(-int(cumulative[-1]) * int(fraction * 1000) // 1000)
    expected = int(np.searchsorted(cumulative, target, side="left"))
    monkeypatch.setattr(stats, "_CHUNK", 100)
    assert stats.position_at_mass(f, fraction) == expected
    big = f.astype(np.int64) * (2**62 // int(f[0]) // 4096)  # chunk sums past int64: exact through Python ints
    exact = np.cumsum(big.astype(object))
    target = -(-int(exact[-1]) * int(fraction * 1000) // 1000)
    assert stats.position_at_mass(big, fraction) == int(np.searchsorted(exact, target, side="left"))


@pytest.mark.parametrize("regime", ["natural", "uniform", "pack"])
def test_one_window_peaks_within_the_estimate_the_commands_check(regime):
    """Peak resident memory of f(i) at L = 2^24, in a fresh process, beyond what it held before."""
    script = f"""
from freqlab.frequency.regime_table import regime_rows

def status(key):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(key))

regime_rows([1000, 5000000], [100, 3], [64], [{regime!r}], tokens=10**12)  # compile and import first
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # the peak (VmHWM) starts again from the resident size now
before = status("VmRSS:")
regime_rows([1000, 5000000], [100, 3], [1 << 24], [{regime!r}], tokens=10**12)
print((status("VmHWM:") - before) * 1024 / (1 << 24))
"""
    measured = float(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert 7.5 < measured <= BYTES_PER_POSITION


def test_the_table_freq_out_writes_peaks_within_the_estimate_it_checks(tmp_path):
    """Peak resident memory of ``write_frequencies`` (``freq --out``), 2 windows × 2 regimes, in a fresh process:
    within OUT_BYTES_PER_POSITION per position kept plus one window's f. A review: a list of every row's regime
    label took it to ~111 bytes a position, and `freq --L 256M --out` was killed past the bound of 32."""
    from freqlab.cli.freq import OUT_BYTES_PER_POSITION

    script = f"""
from freqlab.histogram import LengthHistogram

def status(key):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(key))

h = LengthHistogram.from_counts([1000, 5000000], [100, 3])
h.write_frequencies({str(tmp_path / "warm.parquet")!r}, [64], ["natural", "concat"])  # compile and import first
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # the peak (VmHWM) starts again from the resident size now
before = status("VmRSS:")
h.write_frequencies({str(tmp_path / "f.parquet")!r}, [1 << 22, 1 << 21], ["natural", "concat"])
print((status("VmHWM:") - before) * 1024)
"""
    measured = float(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    kept = 2 * ((1 << 22) + (1 << 21))
    assert measured <= OUT_BYTES_PER_POSITION * kept + BYTES_PER_POSITION * (1 << 22)
    assert measured > 16 * kept  # the table itself: positions and f, 8 bytes each


def test_a_uniform_f_of_every_length_peaks_within_its_own_estimate(monkeypatch):
    """A budget of at least one sweep L(L+1)/2 gives every length 1..L a count: its counts, lengths and f take
    UNIFORM_BYTES_PER_POSITION (a review: 40 bytes a position through index copies, 65 with --weights, past the 10
    the command checked); below a sweep the lengths are few and the common estimate holds (the test above)."""
    from freqlab.errors import FreqlabError
    from freqlab.frequency.regimes import UNIFORM_BYTES_PER_POSITION

    script = """
from freqlab.frequency.position import position_frequency

def status(key):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(key))

position_frequency([10**6], [10**12], 64, "uniform")  # compile and import first
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")
before = status("VmRSS:")
position_frequency([10**6], [10**12], 1 << 22, "uniform")  # 10^18 tokens: 10^5 sweeps of 2^22
print((status("VmHWM:") - before) * 1024 / (1 << 22))
"""
    measured = float(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert 16 < measured <= UNIFORM_BYTES_PER_POSITION
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", str(20 * (1 << 22)))  # the common 10 bytes fit, 28 do not
    for tokens in (10**18, (1 << 22) * ((1 << 22) + 1) // 2 - 1):  # a sweep's worth less one token too (a review)
        with pytest.raises(FreqlabError, match=rf"uniform f\(i\) of {tokens:,} tokens, an eighth of a sweep"):
            position_frequency([tokens], [1], 1 << 22, "uniform")
