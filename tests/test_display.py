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
    columns,
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


def test_what_the_data_hold_is_shown_escaped_in_reprs_and_html_and_spaces_as_they_are():
    """Reviews: the repr of a histogram showed its sources' ESC, CR, NUL and right-to-left override raw (one
    cleared the screen, another reversed what followed it in HTML), a newline made more than three lines, and a
    file name's byte that is not UTF-8 made the HTML unencodable; NBSP and U+3000 are spaces and stay as they are."""
    from freqlab.histogram import LengthHistogram, combine_sources

    names = ["ansi\x1b[31mRED", "nl\nx", "rtl\u202eabc", "nb\xa0sp", "日本語\u3000コーパス"]
    h = combine_sources({name: LengthHistogram.from_lengths([3, 5]) for name in names}, corpus="c\udcff")
    text = repr(h)
    assert "\x1b" not in text and "\u202e" not in text and "\udcff" not in text and len(text.splitlines()) <= 3
    assert "ansi\\x1b[31mRED" in text and "nl\\nx" in text and "nb\xa0sp" in text and "日本語\u3000コーパス" in text
    html = h._repr_html_()
    html.encode("utf-8")  # no surrogate left
    assert "rtl\\u202eabc" in html and "\x1b" not in html and "\u202e" not in html


def test_reports_keep_a_name_on_its_line_and_columns_aligned():
    """Reviews: a calibration label's newline forged a report line in the note; schedule stage names wider than 16
    columns pushed their row's columns along."""
    from freqlab.frequency.calibrate import CalibrationPoint, calibrate
    from freqlab.frequency.schedule import parse_schedule, schedule_frequency
    from freqlab.histogram import LengthHistogram

    points = [CalibrationPoint("r1\nmethod: forged", 1500, 10**11, 9e10, tokens=5 * 10**11),
              CalibrationPoint("r2", 1800, 2 * 10**11, 1.5e11, tokens=10**12)]  # fmt: skip
    report = calibrate(points).report().splitlines()
    assert [line for line in report if line.startswith("method:")] == [report[-1]]
    assert any(line.startswith("note:") and "r1\\nmethod: forged (it allows" in line for line in report)
    stages = [{"name": name, "L": 8, "tokens": 100} for name in ("a", "日本語ステージ名前", "x" * 30)]
    result = schedule_frequency(
        parse_schedule({"stages": stages}, source="s", histogram=LengthHistogram.from_counts([8], [3]))
    )
    rows = [line for line in result.report().splitlines() if " L=8 " in line]
    assert len(rows) == 3 and len({columns(line[: line.index(" L=8 ")]) for line in rows}) == 1
