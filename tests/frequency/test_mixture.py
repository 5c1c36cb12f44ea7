"""Source weights: the mix's histogram equals the mix built document by document; weights are checked one line each."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from freqlab.errors import FreqlabError
from freqlab.frequency import position_frequency
from freqlab.frequency.mixture import PRESETS, Mixture, contribution_table, describe_table, weighted_histogram
from freqlab.frequency.regime_table import regime_rows
from freqlab.histogram import LengthHistogram, combine_sources

CODE = [50, 50, 900, 2500]
WEB = [40, 700, 1024, 3000]


def split() -> LengthHistogram:
    return combine_sources({"code": LengthHistogram.from_lengths(CODE), "web": LengthHistogram.from_lengths(WEB)})


def brute_f(doc_lengths: list[int], L: int) -> list[int]:
    """STRING Eq. 2, natural regime, on explicit segments."""
    segments = [s for n in doc_lengths for s in [L] * (n // L) + ([n % L] if n % L else [])]
    return [sum(max(s - i, 0) for s in segments) for i in range(L)]


@pytest.mark.parametrize("regime", ["natural", "truncate", "concat", "uniform", "pack", "best-fit"])
def test_integer_epochs_are_the_mix_built_by_hand(regime):
    mix, info = weighted_histogram(split(), "code=3,web=2")
    by_hand = LengthHistogram.from_lengths(CODE * 3 + WEB * 2)
    assert info.exact and info.arithmetic.startswith("exact int64")
    assert mix.lengths.tolist() == by_hand.lengths.tolist() and mix.counts.tolist() == by_hand.counts.tolist()
    f = position_frequency(mix.lengths, mix.counts, 1024, regime)
    assert f.dtype == np.int64
    assert f.tolist() == position_frequency(by_hand.lengths, by_hand.counts, 1024, regime).tolist()
    if regime == "natural":
        assert f.tolist() == brute_f(CODE * 3 + WEB * 2, 1024)


def test_shares_are_float64_with_the_rounding_stated():
    h = split()
    mix, info = weighted_histogram(h, "code=70%,web=30%")
    assert not info.exact and "float64" in info.arithmetic and info.max_rounding_error < 1e-9
    assert mix.sources["code"].tokens / mix.tokens == pytest.approx(0.7, rel=1e-9)
    # natural f is linear in the counts: f_mix = Σ_s m_s f_s up to one common factor, m_s = p_s / T_s
    L = 1024
    reference = sum(
        p / h.sources[s].tokens * position_frequency(h.sources[s].lengths, h.sources[s].counts, L).astype(float)
        for s, p in (("code", 0.7), ("web", 0.3))
    )
    f = position_frequency(mix.lengths, mix.counts, L)
    assert np.allclose(f / f[0], reference / reference[0], rtol=1e-9, atol=0)
    # non-integer epochs take the same path
    assert not weighted_histogram(h, "code=2.5,web=1")[1].exact


def test_a_zero_weight_leaves_a_source_out():
    mix, _ = weighted_histogram(split(), {"code": 0, "web": 1})
    assert mix.tokens == sum(WEB) and mix.sources["code"].documents == 0


def test_a_source_of_empty_documents_only_in_a_mix():
    """A source whose documents were all empty (header only): a share of it is one line (the message's Fraction
    formatting raised a TypeError), an epoch weight past int64 multiplies nothing (an OverflowError)."""
    empty = LengthHistogram(np.zeros(0, np.int64), np.zeros(0, np.int64), empty_documents=3)
    h = combine_sources({"a": LengthHistogram.from_counts([5, 3000], [1, 4]), "e": empty})
    with pytest.raises(FreqlabError, match=r"source 'e' has no tokens, so it cannot make up 50\.0%"):
        weighted_histogram(h, "a=50%,e=50%")
    for weights in ({"a": 1, "e": 2**63}, "a=1,e=1e300"):
        mix, _ = weighted_histogram(h, weights)
        assert mix.tokens == 5 + 4 * 3000 and mix.sources["e"].documents == 0


def test_numpy_floats_are_weights():
    """np.float64(0.5) was refused as 'must be a number, got np.float64(0.5)' (its repr), np.float32 taken."""
    assert Mixture.parse({"code": np.float64(0.5), "web": 1}).weights == {"code": Fraction(1, 2), "web": 1}
    assert Mixture.parse({"code": np.float32(0.5), "web": 1}).weights["code"] == Fraction(1, 2)


def test_weights_from_files_and_presets(tmp_path):
    (tmp_path / "mix.yaml").write_text("unit: share\nweights: {code: 7, web: 3}\n")
    (tmp_path / "mix.json").write_text(json.dumps({"code": 2, "web": 1}))
    assert Mixture.parse(str(tmp_path / "mix.yaml")).unit == "share"
    assert Mixture.parse(str(tmp_path / "mix.json")).weights == {"code": 2, "web": 1}
    # decimal weights are read as written: 0.1 is 1/10, not the float nearest to it
    assert Mixture.parse("code=0.1,web=0.2").weights["code"] == Fraction(1, 10)
    assert Mixture.parse("tinyllama") is PRESETS["tinyllama"]


def test_relative_shares_are_normalised_and_say_so(tmp_path):
    """Shares in a file (or a preset) are relative weights: normalised to sum 100%, never silently."""
    (tmp_path / "mix.yaml").write_text("unit: share\nweights: {code: 7, web: 4}\n")
    relative = Mixture.parse(str(tmp_path / "mix.yaml"))
    assert relative.share_percent("code") == Fraction(700, 11)
    normalised = "share code=7, web=4 (relative, sum 11: normalised to code=63.64%, web=36.36%)"
    assert relative.describe().startswith(normalised)
    assert PRESETS["llama1"].describe().startswith("share RedPajamaCommonCrawl=67%, RedPajamaC4=15%,")  # sums to 100
    mix, info = weighted_histogram(split(), relative)
    code, web = mix.sources["code"].tokens, mix.sources["web"].tokens
    assert abs(code / (code + web) - 7 / 11) < 1e-6  # the mix holds 7/11 code tokens
    table = describe_table(contribution_table(mix, info, 1024, "natural"), info, 1024)
    assert "normalised to code=63.64%" in table[0]
    assert [line.split()[2] for line in table[2:4]] == ["63.64%", "36.36%"]


def test_presets_quote_their_sources():
    for name, mixture in PRESETS.items():
        assert mixture.citation, name
    llama = PRESETS["llama1"]  # Touvron et al. 2023, Table 1: sampling proportions
    assert llama.unit == "share" and sum(llama.weights.values()) == 100
    assert (llama.weights["RedPajamaCommonCrawl"], llama.weights["RedPajamaBook"]) == (67, Fraction(9, 2))
    epochs = PRESETS["llama1-epochs"]  # the same table's epochs
    assert (epochs.weights["RedPajamaWikipedia"], epochs.weights["RedPajamaBook"]) == (
        Fraction("2.45"),
        Fraction("2.23"),
    )
    assert PRESETS["tinyllama"].weights == {"slimpajama": 7, "starcoderdata": 3}
    assert sum(PRESETS["slimpajama"].weights.values()) == 100


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ("code=1", "no weight for source 'web'"),
        ("code=1,web=1,books=2", "source 'books' is not in the histogram"),
        ("code=-1,web=1", "must be >= 0"),
        ("code=x,web=1", "must be a number"),
        ("code=1%,web=1", r"as a share \(W%\) or none"),
        ("code=70%,web=40%", r"the shares sum to 110%, not 100%; give shares that sum to 100%"),
        ("code=0.7%,web=0.3%", r"the shares sum to 1%, not 100%"),
        # just off 100%: enough digits to show the difference, never "100.000%, not 100%"
        ("code=75%,web=25.0000001%", r"the shares sum to 100\.0000001%, not 100%"),
        ("code=75%,web=24.9999999%", r"the shares sum to 99\.9999999%, not 100%"),
        ("code=75%,web=25.000000000000000000000000000001%", r"the shares sum to 100 \+ 1e-30%, not 100%"),
        ("code=0,web=0", "every weight is 0"),
        ("code=1,code=2", "given twice"),
        ("nonsense", "not SOURCE=W"),
    ],
)
def test_bad_weights_are_one_line_errors(weights, message):
    with pytest.raises(FreqlabError, match=message) as error:
        weighted_histogram(split(), weights)
    assert "\n" not in str(error.value)


def test_a_label_the_command_line_cannot_spell_is_pointed_to_a_mixture_file(tmp_path):
    """A review: a source labelled '' (or holding '=' or ',') could not be weighted on the command line ('=1' is not
    SOURCE=W), and "no weight for source ''" said nothing of the way that works."""
    h = combine_sources({"": LengthHistogram.from_lengths(CODE), "web": LengthHistogram.from_lengths(WEB)})
    with pytest.raises(FreqlabError, match=r"no weight for source '' .*given in a mixture file: \{weights: \{'': 1"):
        weighted_histogram(h, Mixture.parse("web=1", name="--weights"))
    (tmp_path / "mix.yaml").write_text("weights: {'': 2, web: 1}\n")
    mix, _ = weighted_histogram(h, str(tmp_path / "mix.yaml"))
    assert mix.sources[""].counts.tolist() == (2 * LengthHistogram.from_lengths(CODE).counts).tolist()


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("weights:\n  code: 1\n  web: 2\n  code: 5\n", "code", 4),  # a weight given twice
        ("unit: share\nweights: {code: 7, web: 3}\nunit: epochs\n", "unit", 3),  # a top-level key
        ('{"code": 2, "web": 1, "web": 4}', "web", 1),  # JSON too
    ],
)
def test_a_mixture_file_with_a_key_given_twice_is_refused_as_on_the_command_line(tmp_path, text, key, line):
    path = tmp_path / "mix.yaml"
    path.write_text(text)
    with pytest.raises(FreqlabError) as error:
        Mixture.parse(str(path))
    assert str(error.value) == f"{path}: not valid YAML/JSON (key {key!r} given twice, line {line})"


def test_a_histogram_without_sources_cannot_be_weighted():
    with pytest.raises(FreqlabError, match="no sources to weight"):
        weighted_histogram(LengthHistogram.from_lengths(CODE), "code=1")


def test_contribution_table_adds_each_sources_own_f():
    L = 1024
    mix, info = weighted_histogram(split(), "code=3,web=1")
    rows = {r["source"]: r for r in contribution_table(mix, info, L, "natural")}
    tail = {s: sum(brute_f(docs, L)[3 * L // 4 :]) for s, docs in (("code", CODE * 3), ("web", WEB))}
    assert rows["code"]["tail_share"] == pytest.approx(tail["code"] / sum(tail.values()))
    assert rows["code"]["token_share"] == pytest.approx(3 * sum(CODE) / (3 * sum(CODE) + sum(WEB)))
    assert rows["web"]["tokens"] == sum(WEB) and rows["web"]["weight"] == 1
    assert rows["code"]["upweight"] == pytest.approx(rows["code"]["token_share"] / (sum(CODE) / (sum(CODE) + sum(WEB))))


def test_the_tail_share_of_a_share_mix_is_exact_where_an_int64_sum_wraps():
    """A share mix scales counts up to ~2^30 documents: f's tail summed past 2^63 wrapped (a review met 686.2% and
    -586.2%). One 3000-token and one 2000-token document at 50% each; f(i) = c(|s| - i) summed in Python ints."""
    h = combine_sources(
        {"a": LengthHistogram.from_counts([3000], [10**6]), "b": LengthHistogram.from_counts([2000], [10**6])}
    )
    mix, info = weighted_histogram(h, "a=50%,b=50%")
    rows = {r["source"]: r["tail_share"] for r in contribution_table(mix, info, 2048, "natural")}
    (c_a,), (c_b,) = mix.sources["a"].counts.tolist(), mix.sources["b"].counts.tolist()
    tail_a = sum(c_a * (min(3000, 2048) - i) for i in range(1536, 2048))  # truncated to the window: 2048 - i
    tail_b = sum(c_b * (2000 - i) for i in range(1536, 2000))
    assert tail_a + tail_b > 2**63
    assert rows == {"a": pytest.approx(tail_a / (tail_a + tail_b)), "b": pytest.approx(tail_b / (tail_a + tail_b))}


def test_a_share_mix_for_a_regime_that_walks_documents_stays_small_and_matches_the_unbounded_mix():
    """pack and best-fit walk the histogram document by document: their float64 mix is kept below
    MAX_STREAM_DOCUMENTS (else ~10^11 documents: a plan that never finishes), and its shares are the same mix's."""
    from freqlab.frequency.mixture import MAX_STREAM_DOCUMENTS
    from freqlab.frequency.regimes import expands_documents

    assert expands_documents("best-fit") and expands_documents(["natural", "pack"])
    assert not expands_documents(["natural", "truncate", "concat", "uniform"])
    big, _ = weighted_histogram(split(), "code=70%,web=30%")
    small, _ = weighted_histogram(split(), "code=70%,web=30%", stream=True)
    assert big.documents > MAX_STREAM_DOCUMENTS >= small.documents
    for s in ("code", "web"):
        assert small.sources[s].tokens / small.tokens == pytest.approx(big.sources[s].tokens / big.tokens, rel=1e-6)
    f = position_frequency(small.lengths, small.counts, 1024, "best-fit")
    assert f[0] == small.tokens  # every token is one occurrence of i = 0


def test_a_mix_kept_small_for_a_walk_keeps_its_rare_long_documents_in_proportion():
    """100 documents of 3,000-3,990 tokens beside 4·10^7 of 100: a mix of 20M documents (kept small for pack) weighs
    each long one 0.48; rounded one by one they were all 0, and so was every position past 3L/4 (a review: pack's
    effective length 4794 against 4904 on a lognormal corpus). Rounded as tails, 48 of them stay: the mass past 3L/4
    within 0.3% of the unbounded mix's, and every tail count within its half document."""
    a = LengthHistogram.from_counts([100, *range(3000, 4000, 10)], [40_000_000, *[1] * 100])
    h = combine_sources({"a": a, "b": LengthHistogram.from_counts([200, 1500], [10_000, 500])})
    rows = {}
    for stream in (False, True):
        mix, info = weighted_histogram(h, "a=90%,b=10%", stream=stream)
        rows[stream] = regime_rows(mix.lengths, mix.counts, [4096], ["natural"], tokens=10**12)[0]
        long = mix.sources["a"].counts[mix.sources["a"].lengths >= 3000]
        assert info.max_rounding_error <= 1
    assert rows[True]["share_at_least_three_quarters"] == pytest.approx(
        rows[False]["share_at_least_three_quarters"], rel=3e-3
    )
    assert long.sum() == round(100 * float(Fraction(info.scale) * Fraction(9, 10) / a.tokens))  # 48 of the 100 kept
    assert rows[True]["effective_length"] == rows[False]["effective_length"]
    # one document of 50,000 tokens weighs 0.48 there: rounded away, and the error says so (1: a tail dropped), where
    # counting only tails of half a document or more said 4e-06 (a review)
    lone = combine_sources({"a": LengthHistogram.from_counts([100, 50_000], [40_000_000, 1]), "b": h.sources["b"]})
    mix, info = weighted_histogram(lone, "a=90%,b=10%", stream=True)
    assert mix.lengths.max() == 1500 and info.max_rounding_error == 1.0


def test_best_fit_refuses_a_histogram_it_would_walk_forever_in_one_line():
    from freqlab.frequency.regimes import MAX_STREAM_DOCUMENTS

    lengths, counts = np.array([7]), np.array([MAX_STREAM_DOCUMENTS + 1])
    with pytest.raises(
        FreqlabError, match=r"^the best-fit regime places one by one up to [\d,]+ chunks of at most L/2"
    ):
        position_frequency(lengths, counts, 1024, "best-fit")


def test_best_fit_places_chunks_longer_than_half_the_window_in_bulk_whatever_their_count():
    """A review: one 2^33 + 4-token document at L = 4 (2^31 + 1 full rows) was refused as 2^31 + 1 chunks placed one
    by one, which the kernel places in bulk. Full rows and chunks of 3 (> L/2) each fill a row: f is natural's."""
    from freqlab.frequency.regimes import MAX_STREAM_DOCUMENTS

    for lengths, counts in (([2**33 + 4], [1]), ([3], [MAX_STREAM_DOCUMENTS + 1])):
        best = position_frequency(lengths, counts, 4, "best-fit")
        assert best.tolist() == position_frequency(lengths, counts, 4, "natural").tolist()


def test_epochs_too_large_for_int64_are_one_line_before_any_product():
    with pytest.raises(FreqlabError, match=r"^the weighted mix holds 2\^62 tokens or documents or more \(a mix stays"):
        weighted_histogram(split(), "code=1e30,web=1")


def test_a_weight_too_small_to_keep_one_document_is_refused_not_rounded_away():
    with pytest.raises(FreqlabError, match=r"^code: weight 1e-300 is too small beside the others"):
        weighted_histogram(split(), "code=1e-300,web=1")


def test_a_frequency_table_takes_one_regime_name_too():
    h = LengthHistogram.from_lengths(CODE)
    assert h.frequency_table(1024, "natural")["f"].to_list() == h.frequency_table(1024, ["natural"])["f"].to_list()


def test_weighted_histogram_names_what_it_takes():
    """A review: a list was "'list' object has no attribute 'sources'"."""
    with pytest.raises(FreqlabError, match=r"weighted_histogram takes a LengthHistogram split by source, got \[3\]"):
        weighted_histogram([3], "a=1")
