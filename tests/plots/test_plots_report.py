"""scan_figures writes the main figures of a histogram (what `freqlab scan --plot` calls)."""

import os

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


def test_a_figure_is_listed_as_soon_as_it_is_written_and_keeps_its_first_stamp(tmp_path, histogram, monkeypatch):
    """A review: an interrupt between two formats of one figure left a drawn file unlisted, refused by every later
    run; and a figure the user edited while the rest was drawn was stamped again, so the next run took it away."""
    import freqlab.plots.report as report

    saved, calls = report.save_figure, []

    def interrupted(figure, path, formats):
        calls.append(path)
        if len(calls) == 2:  # the first figure's second format
            raise KeyboardInterrupt
        return saved(figure, path, formats)

    monkeypatch.setattr(report, "save_figure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        scan_figures(histogram, [2048], ["natural"], tmp_path, ["png", "svg"])
    monkeypatch.setattr(report, "save_figure", saved)
    assert len(scan_figures(histogram, [2048], ["natural"], tmp_path, ["png", "svg"])) == 4  # the png was listed

    def edited_meanwhile(figure, path, formats):
        written = saved(figure, path, formats)
        if path.name == "effective_length":  # the user edits the first figure while the second is drawn
            (tmp_path / "new" / "frequency_L2048.png").write_bytes(b"edited while drawing")
        return written

    monkeypatch.setattr(report, "save_figure", edited_meanwhile)
    scan_figures(histogram, [2048], ["natural"], tmp_path / "new")
    monkeypatch.setattr(report, "save_figure", saved)
    with pytest.raises(FreqlabError, match=r"frequency_L2048\.png: a file freqlab did not draw there"):
        scan_figures(histogram, [2048], ["natural"], tmp_path / "new")
    assert (tmp_path / "new" / "frequency_L2048.png").read_bytes() == b"edited while drawing"


def test_a_folder_or_list_that_is_no_such_thing_is_refused_before_drawing(tmp_path, histogram):
    """A review: a FIFO named like the list hung the run; a file where the folder goes failed after the scan."""
    (tmp_path / "figures").write_bytes(b"the user's")
    with pytest.raises(FreqlabError, match="figures: not a folder, where the figures go"):
        scan_figures(histogram, [2048], ["natural"], tmp_path / "figures")
    assert (tmp_path / "figures").read_bytes() == b"the user's"
    (tmp_path / "f").mkdir()
    os.mkfifo(tmp_path / "f" / ".written.json")
    with pytest.raises(FreqlabError, match=r"\.written\.json: not a file, where freqlab lists the figures"):
        scan_figures(histogram, [2048], ["natural"], tmp_path / "f")
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == [".written.json"]


def test_scan_figures_from_a_real_scan(tmp_path):
    """What `freqlab scan --plot` does: a scan of the built-in corpus, then its figures."""
    from freqlab.scan import scan

    result = scan(max_docs=60, progress=False, workers=1)
    assert set(result.histogram.sources) <= {"module", "package", "test"}
    written = scan_figures(result.histogram, [2048], ["natural", "concat"], tmp_path, ["png"], tokens=None)
    assert [p.name for p in written] == ["frequency_L2048.png", "effective_length.png", "sources.png"]
