"""scan_figures writes the main figures of a histogram (what `freqlab scan --plot` calls)."""

import pytest

from freqlab import FreqlabError
from freqlab.plots import scan_figures


def test_scan_figures_writes_the_main_figures_into_the_folder_given(tmp_path, sourced):
    written = scan_figures(sourced, [1024, 2048], ["natural", "concat"], tmp_path / "figs", ["svg"])
    names = [p.relative_to(tmp_path).as_posix() for p in written]
    assert names == [
        f"figs/{stem}.{fmt}"
        for stem in ("frequency_L1024", "frequency_L2048", "windows", "effective_length", "sources")
        for fmt in ("svg",)
    ]
    assert all(p.stat().st_size > 1000 for p in written)


def test_scan_figures_without_sources_or_second_window(tmp_path, histogram):
    written = scan_figures(histogram, [2048], ["natural"], tmp_path)
    assert [p.name for p in written] == ["frequency_L2048.png", "effective_length.png"]
    with pytest.raises(FreqlabError, match="unknown regime 'zigzag'"):
        scan_figures(histogram, [2048], ["zigzag"], tmp_path)


def test_scan_figures_from_a_real_scan(tmp_path):
    """What `freqlab scan --plot` does: a scan of the built-in corpus, then its figures."""
    from freqlab.scan import scan

    result = scan(max_docs=60, progress=False, workers=1)
    assert set(result.histogram.sources) <= {"module", "package", "test"}
    written = scan_figures(result.histogram, [2048], ["natural", "concat"], tmp_path, ["png"], tokens=None)
    assert [p.name for p in written] == ["frequency_L2048.png", "effective_length.png", "sources.png"]
