"""freqlab.display: reprs of one to three lines under 1 KB, HTML tables that hold the numbers, small SVG charts."""

from __future__ import annotations

import numpy as np
from display_helpers import Shown

from freqlab.display import (
    MAX_REPR,
    Chart,
    Display,
    Series,
    clip,
    count_ticks,
    html_table,
    sample_indices,
    svg_chart,
)


def test_text_is_the_title_headline_and_at_most_two_lines_clipped_to_1kb():
    d = Display("Thing", "x" * 5000, lines=["a", "b", "c"])
    text = d.text()
    assert len(text) <= MAX_REPR and text.splitlines()[1:] == ["a", "b"] and text.splitlines()[0].endswith("…")


def test_html_escapes_and_keeps_every_number():
    d = Display("<T>", "head & tail", rows=[("a < b", "1,234")], table=(("k", "v"), [("x", "5")]), code=[("c", "x<y")])
    page = Shown(d.html())
    assert page.rows["a < b"] == "1,234" and ["x", "5"] in page.tables[1] and page.code == ["x<y"]
    assert "<T>" in "".join(page.text) and "&lt;T&gt;" in d.html()


def test_long_tables_are_cut_with_a_count_of_what_is_left():
    page = Shown(html_table(("n",), [(str(k),) for k in range(100)], limit=10))
    assert len(page.tables[0]) == 1 + 10 + 1 and page.tables[0][-1] == ["… 90 more rows"]


def test_charts_are_small_deterministic_and_sample_long_curves():
    y = np.arange(10**6, 0, -1)
    chart = Chart((0, y.size), (0, float(y[0])), x_ticks=[(0, "0")], y_ticks=count_ticks(float(y[0]))[0])
    svg = svg_chart(chart, [Series(np.arange(y.size), y)])
    assert svg == svg_chart(chart, [Series(np.arange(y.size), y)]) and len(svg) < 8000
    assert svg.startswith("<svg") and svg.count(",") < 2 * 240 + 20  # at most 240 points drawn
    assert sample_indices(10**6)[[0, -1]].tolist() == [0, 10**6 - 1]


def test_count_ticks_write_small_counts_out_and_name_big_units():
    assert count_ticks(9.4e5) == (
        [(0.0, "0"), (200000.0, "200,000"), (400000.0, "400,000"), (600000.0, "600,000"), (800000.0, "800,000")],
        "",
    )
    assert count_ticks(2.2e12)[1] == "T = 10^12" and count_ticks(2.2e12)[0][1] == (500000000000.0, "0.5T")
    assert clip("abc", 3) == "abc" and clip("abcd", 3) == "ab…"


def test_source_names_are_cut_by_columns_in_the_middle_and_stay_apart():
    """An adversary: two sources differing after character 39 were shown alike in tables and legends; a 40-character
    CJK name took 80 columns (a 10.5 in figure); an escape was cut in half (\\x1…); a combining accent counted a
    column; NBSP and the ideographic space were drawn as escapes."""
    from freqlab.display import columns, name_column, source_name, source_names

    v2, v3 = "commoncrawl_en_2023_06_deduplicated_filtered_v2", "commoncrawl_en_2023_06_deduplicated_filtered_v3"
    assert source_names([v2, v3]) == [
        "commoncrawl_en_2023_…licated_filtered_v2",
        "commoncrawl_en_2023_…licated_filtered_v3",
    ]
    same_ends = ["a" * 30 + "x" + "b" * 30, "a" * 30 + "y" + "b" * 30]
    assert source_names(same_ends) == same_ends  # cut alike: shown whole, so each can still be named
    assert columns(source_name("語" * 60)) <= 40 and source_name("語" * 60).count("…") == 1
    assert source_name("a" * 36 + "\x1b[0m").endswith("\\x1b[0m")  # the end kept whole, never "\x1…"
    assert columns("cafe\u0301") == 4 and columns("a\u200db") == 2
    assert (
        source_name("Wikipedia\u00a0FR") == "Wikipedia\u00a0FR"
        and source_name("日本語\u3000コーパス") == "日本語\u3000コーパス"
    )
    head, *rows = name_column(["cafe\u0301", "cafe"])
    assert {columns(row) for row in (head, *rows)} == {6}


def test_stats_shows_source_names_as_every_table_does():
    """An adversary: `freqlab stats` printed "" and " " as "source" and "source " and padded CJK names by characters."""
    from freqlab.display import columns
    from freqlab.histogram import LengthHistogram, combine_sources

    h = combine_sources({name: LengthHistogram.from_lengths([5]) for name in ("", " ", "日本語")})
    lines = [line for line in h.report(8).splitlines() if line.startswith("source ")]
    assert sorted(line.split("  ")[0].rstrip() for line in lines) == ["source ' '", "source ''", "source 日本語"]
    assert len({columns(line.split("  1 documents")[0]) for line in lines}) == 1
