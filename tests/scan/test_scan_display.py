"""A ScanResult shows itself: a short repr (histogram numbers, mass shares per window, where it was written) and
HTML with the histogram's table, the windows table of summary["windows"] and the length chart; the shares are those
of the slow reference (explicit segments), and the repr stays short however many windows and documents."""

from __future__ import annotations

import numpy as np
from display_helpers import shown
from frequency.reference import concat_segments, expand, frequency_of_segments, natural_segments

from freqlab.histogram import LengthHistogram
from freqlab.scan import ScanResult, scan
from freqlab.scan.summary_json import budget_and_windows


def reference_share(h: LengthHistogram, L: int, segments) -> tuple[float, float]:
    """Shares of position mass at i ≤ L/2 and i ≥ 3L/4, from the explicit segments of every document."""
    f = np.asarray(frequency_of_segments(segments(expand(h.lengths, h.counts), L), L), dtype=np.float64)
    return f[: L // 2 + 1].sum() / f.sum(), f[(3 * L) // 4 :].sum() / f.sum()


def test_scan_result_display(tmp_path, counter):
    result = scan(
        max_docs=40,
        tokenizer=counter,
        workers=1,
        progress=False,
        L=[1024, 2048],
        regimes=["natural", "concat"],
        out=tmp_path / "out",
    )
    h = result.histogram
    expected = {
        (L, name): reference_share(h, L, segments)
        for L in (1024, 2048)
        for name, segments in (("natural", natural_segments), ("concat", concat_segments))
    }
    text = repr(result)
    first, second, third = text.splitlines()
    assert first.startswith(f"ScanResult 'python-stdlib' ({h.tokenizer}): {h.documents:,} documents, {h.tokens:,}")
    assert second == "mass at i ≤ L/2: " + ", ".join(
        f"L={L} {name} {100 * head:.1f}%" for (L, name), (head, _) in expected.items()
    )
    assert third.startswith(f"written to {tmp_path / 'out'}; partial: stopped at max_docs=40")
    page = shown(result)
    assert page.rows["tokens"] == f"{h.tokens:,}" and page.rows["time"].endswith("(local, 1 worker)")
    assert page.rows["documents read"] == "40" and page.rows["budget T"] == "1T tokens (default)"
    table = next(t for t in page.tables if t[0][:2] == ["L", "regime"])
    assert [row[:4] for row in table[1:]] == [
        [str(L), name, f"{100 * head:.1f}%", f"{100 * tail:.1f}%"] for (L, name), (head, tail) in expected.items()
    ]
    assert page.svgs == 1


def test_a_big_scan_result_keeps_its_repr_short():
    rng = np.random.default_rng(0)
    big = LengthHistogram.from_lengths(rng.integers(1, 10**6, 200_000), corpus="big " * 50, tokenizer="tekken")
    Ls, regimes = [1024 << k for k in range(6)], ["natural", "truncate", "concat", "uniform"]
    result = ScanResult(big, budget_and_windows(big, Ls, regimes, tokens=10**12))
    page = shown(result)  # 1-3 lines, under 1 KB
    assert repr(result).splitlines()[1].endswith("(+20 more)")  # 24 windows, 4 named
    table = next(t for t in page.tables if t[0][:2] == ["L", "regime"])
    assert len(table) == 1 + 24 and table[-1][:2] == ["32768", "uniform"]
    # the uniform regime is the closed form of lengths uniform on 1..L (reference.md: 87.52% at L = 2048), any L
    assert {row[2] for row in table[1:] if row[1] == "uniform"} == {"87.5%"}
    assert page.rows["documents with tokens"] == "200,000" and len(result._repr_html_()) < 20_000


def test_a_scan_without_a_single_token_says_so_instead_of_a_median_of_0(tmp_path, counter):
    (tmp_path / "a.jsonl").write_text('{"text": ""}\n{"text": ""}\n', encoding="utf-8")
    report = scan(str(tmp_path), tokenizer=counter, workers=1, progress=False).report()
    assert "documents  2 read = 0 tokenized + 2 empty + 0 skipped" in report
    assert "tokens     0 (no document with a token)" in report and "median" not in report
