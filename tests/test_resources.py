"""Memory and time estimates: the machine's available memory, one-line refusals, and MemoryError named."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import freqlab.frequency.position as position
from freqlab.cli import main
from freqlab.errors import FreqlabError
from freqlab.histogram import LengthHistogram
from freqlab.resources import (
    MEMORY_ENV,
    SECONDS_ENV,
    ResourceError,
    available_memory,
    doing,
    human_bytes,
    require_memory,
    require_time,
)


def test_available_memory_is_memavailable_of_proc_meminfo_unless_overridden(monkeypatch):
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    with open("/proc/meminfo") as handle:
        fields = dict(line.split(":", 1) for line in handle)
    expected = int(fields["MemAvailable"].split()[0]) * 1024
    assert abs(available_memory() - expected) < 256 << 20  # it moves while the test runs
    monkeypatch.setenv(MEMORY_ENV, "2e9")
    assert available_memory() == 2_000_000_000


@pytest.mark.parametrize("value", ["abc", "-5", "0", "1e400", "nan", "inf"])
def test_a_limit_set_in_the_environment_is_a_positive_number_or_one_line(tmp_path, monkeypatch, value):
    monkeypatch.setenv(MEMORY_ENV, value)
    with pytest.raises(FreqlabError, match=rf"FREQLAB_MEMORY_BYTES='{value}': expected a positive number of bytes"):
        available_memory()
    monkeypatch.setenv(SECONDS_ENV, value)
    with pytest.raises(FreqlabError, match=rf"FREQLAB_MAX_SECONDS='{value}': expected a positive number of seconds"):
        require_time(1.0, "--grid", "a search")
    LengthHistogram.from_counts([10], [1]).to_parquet(tmp_path / "h.parquet")
    result = CliRunner().invoke(main, ["freq", str(tmp_path / "h.parquet")])  # the CLI: one line, no traceback
    assert result.exit_code == 1 and result.output.startswith("Error: FREQLAB_MEMORY_BYTES="), result.output


def test_a_refusal_names_the_option_what_it_sizes_and_both_amounts(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "1000000000")
    require_memory(10**9, "--L 1", "exactly what is available")  # not more: allowed
    with pytest.raises(ResourceError) as error:
        require_memory(12.8e9, "--L 268,435,456", "f(i)")
    assert str(error.value) == "--L 268,435,456 needs ~12.8 GB of memory (f(i)), more than the 1.0 GB available"
    monkeypatch.setenv(SECONDS_ENV, "60")
    with pytest.raises(ResourceError) as error:
        require_time(3 * 86400, "--random-sets 10", "scoring")
    assert str(error.value) == (
        "--random-sets 10 would take ~3 days (scoring), more than the 60 s freqlab allows "
        "($FREQLAB_MAX_SECONDS sets it)"
    )


def test_human_bytes_uses_decimal_units():
    assert [human_bytes(n) for n in (999, 1000, 1.5e6, 12.8e9, 4.2e12)] == [
        "999 B",
        "1.0 kB",
        "1.5 MB",
        "12.8 GB",
        "4.2 TB",
    ]


def test_a_memory_error_no_estimate_foresaw_says_what_was_being_done(tmp_path, monkeypatch):
    with pytest.raises(ResourceError, match=r"^out of memory while sorting$"), doing("sorting"):
        raise MemoryError

    def exhausted(segs):
        raise MemoryError

    monkeypatch.setattr(position, "segment_frequency", exhausted)
    hist = tmp_path / "lengths.parquet"
    LengthHistogram.from_lengths([100, 5000]).to_parquet(hist)
    result = CliRunner().invoke(main, ["stats", str(hist), "--L", "2K"])
    assert result.exit_code == 1
    assert result.output == "Error: out of memory while computing f(i) at L = 2048 (natural)\n"
