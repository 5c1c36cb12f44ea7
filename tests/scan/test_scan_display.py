"""A ScanResult shows itself: a short repr (histogram numbers, mass shares per window, where it was written) and
HTML with the histogram's table, the windows table of summary["windows"] and the length chart."""

from __future__ import annotations

from display_helpers import shown

from freqlab.scan import scan


def test_scan_result_display(tmp_path, counter):
    result = scan(max_docs=40, tokenizer=counter, workers=1, progress=False, L=[1024, 2048],
                  regimes=["natural", "concat"], out=tmp_path / "out")
    h, windows = result.histogram, result.summary["windows"]
    text = repr(result)
    first, second, third = text.splitlines()
    assert first.startswith(f"ScanResult 'python-stdlib' ({h.tokenizer}): {h.documents:,} documents, {h.tokens:,}")
    assert second == "mass at i ≤ L/2: " + ", ".join(
        f"L={w['L']} {w['regime']} {100 * w['share_at_most_half']:.1f}%" for w in windows
    )
    assert third.startswith(f"written to {tmp_path / 'out'}; partial: stopped at max_docs=40")
    page = shown(result)
    assert page.rows["tokens"] == f"{h.tokens:,}" and page.rows["time"].endswith("(local, 1 worker)")
    table = next(t for t in page.tables if t[0][:2] == ["L", "regime"])
    assert [row[:4] for row in table[1:]] == [
        [str(w["L"]), w["regime"], f"{100 * w['share_at_most_half']:.1f}%",
         f"{100 * w['share_at_least_three_quarters']:.1f}%"]
        for w in windows
    ]
    assert page.svgs == 1
