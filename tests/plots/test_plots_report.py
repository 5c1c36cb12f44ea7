"""scan_figures writes the main figures of a histogram (what `freqlab scan --plot` calls)."""

import pytest

from freqlab import FreqlabError
from freqlab.plots import scan_figures
from freqlab.plots.report import figure_names


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


def test_scan_figures_replaces_its_own_figures_but_no_file_of_the_users(tmp_path, histogram):
    """A file of the user's named like a figure was replaced (left alone last stop): refused, kept; the figures
    drawn there before are drawn again; the names are those figure_names says."""
    written = scan_figures(histogram, [2048, 4096], ["natural"], tmp_path, ["png", "svg"])
    assert [p.name for p in written] == figure_names([2048, 4096], ["png", "svg"], sources=False)
    assert [p.name for p in scan_figures(histogram, [2048], ["natural"], tmp_path)] == figure_names([2048], ["png"])[:2]
    (tmp_path / "windows.png").write_bytes(b"the user's")  # no longer one of freqlab's: taken away above
    (tmp_path / "effective_length.png").write_bytes(b"edited since")
    with pytest.raises(FreqlabError, match=r"effective_length.png: a file freqlab did not draw there \(or changed"):
        scan_figures(histogram, [2048], ["natural"], tmp_path)
    assert (tmp_path / "effective_length.png").read_bytes() == b"edited since"
    assert (tmp_path / "windows.png").read_bytes() == b"the user's"
    (tmp_path / "effective_length.png").unlink()
    assert len(scan_figures(histogram, [2048], ["natural"], tmp_path)) == 2


def test_scan_figures_from_a_real_scan(tmp_path):
    """What `freqlab scan --plot` does: a scan of the built-in corpus, then its figures."""
    from freqlab.scan import scan

    result = scan(max_docs=60, progress=False, workers=1)
    assert set(result.histogram.sources) <= {"module", "package", "test"}
    written = scan_figures(result.histogram, [2048], ["natural", "concat"], tmp_path, ["png"], tokens=None)
    assert [p.name for p in written] == ["frequency_L2048.png", "effective_length.png", "sources.png"]
