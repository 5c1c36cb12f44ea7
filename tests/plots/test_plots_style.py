"""The freqlab style: applied inside plotting functions only, paper sizes, TrueType PDFs, deterministic export."""

import subprocess
import sys

import matplotlib
import pytest

from freqlab import FreqlabError
from freqlab.plots import freqlab_style, plot_position_frequency, save_figure
from freqlab.plots.style import STYLE, figure_size, new_figure


def test_size_presets_are_paper_widths():
    assert figure_size("one-column") == (3.5, 2.45)
    assert figure_size("two-column", aspect=0.5) == (7.2, 3.6)
    assert figure_size((4, 3)) == (4.0, 3.0)
    with pytest.raises(FreqlabError, match="unknown figure size 'a4'"):
        figure_size("a4")
    with pytest.raises(FreqlabError, match="positive"):
        figure_size((0, 2))


def test_figures_display_in_ipython_without_the_inline_backend(histogram):
    """A fresh notebook (no ``%matplotlib inline``) showed only ``<Figure size ... with 6 Axes>``: the figures
    freqlab returns carry their own PNG repr, which IPython's display formatter uses."""
    from IPython.core.interactiveshell import InteractiveShell

    from freqlab.plots import plot_regimes

    fig = plot_regimes(histogram, 2048)
    data, _ = InteractiveShell.instance().display_formatter.format(fig)
    assert data["image/png"].startswith(b"\x89PNG\r\n\x1a\n") and "<Figure size" in data["text/plain"]


def test_svg_text_stays_text(tmp_path, histogram):
    """svg.fonttype none: labels are <text> elements (editable in Inkscape/Illustrator), not outlined paths."""
    (svg,) = save_figure(plot_position_frequency(histogram, 2048), tmp_path / "f.svg", None)
    content = svg.read_text(encoding="utf-8")
    assert content.count("<text") >= 10 and "natural, L = 2K" in content


def test_importing_freqlab_plots_leaves_rcparams_alone():
    code = (
        "import matplotlib; before = dict(matplotlib.rcParams); import freqlab.plots, freqlab.cli; "
        "assert dict(matplotlib.rcParams) == before"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_style_is_scoped_not_global(histogram):
    before = dict(matplotlib.rcParams)
    fig = plot_position_frequency(histogram, 2048)
    assert dict(matplotlib.rcParams) == before
    with freqlab_style():
        assert matplotlib.rcParams["pdf.fonttype"] == 42
        assert matplotlib.rcParams["ps.fonttype"] == 42
        assert matplotlib.rcParams["text.usetex"] is False
    assert dict(matplotlib.rcParams) == before
    # the figure itself was drawn in the style: 3.5 in wide, 8 pt labels
    assert fig.get_size_inches()[0] == pytest.approx(3.5)
    assert fig.axes[0].xaxis.label.get_fontsize() == STYLE["axes.labelsize"] == 8


def test_pdf_embeds_truetype_fonts_and_no_type3(tmp_path, histogram):
    fig = plot_position_frequency(histogram, 2048)
    (pdf,) = save_figure(fig, tmp_path / "fig", ["pdf"])
    data = pdf.read_bytes()
    # fonttype 42: TrueType outlines (FontFile2), embedded as a TrueType or CID-keyed TrueType font
    assert b"/FontFile2" in data
    assert b"/TrueType" in data or b"/CIDFontType2" in data
    assert b"/Type3" not in data
    # the check is meaningful: matplotlib's own default (fonttype 3) writes Type 3 fonts
    plain = tmp_path / "plain.pdf"
    with matplotlib.rc_context({"pdf.fonttype": 3}):
        fig.savefig(plain)
    assert b"/Type3" in plain.read_bytes()


def test_save_figure_writes_every_format_deterministically(tmp_path, histogram):
    fig = plot_position_frequency(histogram, 2048)
    first = save_figure(fig, tmp_path / "a" / "fig.png", ["png", "pdf", "svg"])
    assert [p.name for p in first] == ["fig.png", "fig.pdf", "fig.svg"]
    second = save_figure(plot_position_frequency(histogram, 2048), tmp_path / "b" / "fig", ("png", "pdf", "svg"))
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert first[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first[0].stat().st_size < 200_000
    assert b"<svg" in first[2].read_bytes()[:2000]


def test_save_figure_format_from_suffix_and_errors(tmp_path):
    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1])
    assert save_figure(fig, tmp_path / "x.svg", None) == [tmp_path / "x.svg"]
    # the name as given: g.PNG was written as g.png, another file where case counts
    assert save_figure(fig, tmp_path / "g.PNG", None) == [tmp_path / "g.PNG"] and (tmp_path / "g.PNG").is_file()
    assert save_figure(fig, tmp_path / "h.PNG", ["png", "pdf"]) == [tmp_path / "h.PNG", tmp_path / "h.pdf"]
    with pytest.raises(FreqlabError, match="unknown figure format 'jpg'"):
        save_figure(fig, tmp_path / "x", ["jpg"])
    with pytest.raises(FreqlabError, match="no file suffix"):
        save_figure(fig, tmp_path / "x", None)


def test_a_figure_written_to_a_stream_is_written_there_as_it_is(tmp_path, histogram):
    """A review: `plot ... --out /dev/stdout --format png` made a file /dev/stdout.png (a suffix added to the
    stream's name) and wrote nothing to the pipe; a figure's writer also seeks, which a pipe cannot."""
    import os
    import threading

    fig = plot_position_frequency(histogram, 2048)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert save_figure(fig, fifo, ["png"]) == [fifo]
    reader.join(timeout=30)
    assert got and got[0].startswith(b"\x89PNG\r\n\x1a\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no pipe.png beside it
    with pytest.raises(FreqlabError, match="pipe: a stream takes one figure; give one format"):
        save_figure(fig, fifo, ["png", "pdf"])
    code = (
        "import freqlab as f, freqlab.plots as p; h = f.LengthHistogram.from_lengths([5, 900]); "
        "p.save_figure(p.plot_position_frequency(h, 64), '/dev/stdout', ['png'])"
    )
    command = [sys.executable, "-c", code]
    piped = subprocess.run(command, capture_output=True, check=True)
    assert piped.stdout.startswith(b"\x89PNG")


@pytest.mark.parametrize("kind", ["waveforms", "windows"])
def test_a_title_too_wide_for_its_figure_is_broken_not_widening_the_file(tmp_path, kind):
    """A review: HARPE's waveforms at one column saved 3.58 in wide and `plot windows --tokens 9e18` 3.68 in (the
    preset is 3.5 in): the tight bounding box took in a title past the figure's edges. It goes onto two lines."""
    from PIL import Image

    from freqlab import LengthHistogram
    from freqlab.plots import plot_waveforms, plot_windows

    if kind == "waveforms":
        fig = plot_waveforms([1e6, 2.5e6], size="one-column")
    else:
        fig = plot_windows(LengthHistogram.from_lengths([100, 3000, 5000]), [2048, 4096], tokens=9e18)
    title = (fig._suptitle or fig.axes[0].title).get_text()
    (path,) = save_figure(fig, tmp_path / "x.png", None, dpi=100)
    assert Image.open(path).size[0] <= 3.5 * 100
    shown = (fig._suptitle or fig.axes[0].title).get_text()
    assert "\n" in shown and shown.replace("\n", " ") == title


def test_a_title_is_broken_outside_its_mathematics_and_the_figure_keeps_its_canvas(tmp_path):
    """An adversary: the break fell inside `$f_T(i) \\geq \\tau$` (drawn as literal text), and saving replaced the
    figure's canvas for good (a pyplot window lost its figure)."""
    from freqlab.plots.style import fit_titles

    fig, ax = new_figure("one-column")
    title = r"frequency above threshold $f_T(i) \geq \tau$ for every window of L = 4K tokens and more words"
    ax.set_title(title)
    canvas = fig.canvas
    fit_titles(fig)
    assert fig.canvas is canvas
    lines = ax.get_title().split("\n")
    assert len(lines) >= 2 and " ".join(lines) == title
    assert all(line.count("$") % 2 == 0 for line in lines)
