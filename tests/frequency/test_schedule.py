"""Multi-stage schedules: stage frequencies scaled to their budgets add up."""

import datetime
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab import FreqlabError, LengthHistogram, position_frequency
from freqlab.frequency import layout_frequency, load_schedule, parse_layout, parse_tokens, schedule_frequency
from freqlab.frequency.schedule import parse_schedule


@pytest.fixture
def corpus(tmp_path):
    LengthHistogram.from_counts([512, 3000, 20000], [100, 10, 2]).to_parquet(tmp_path / "main.parquet")
    LengthHistogram.from_counts([9000], [5]).to_parquet(tmp_path / "long.parquet")
    return tmp_path


def test_token_counts_accept_suffixes():
    assert parse_tokens("1T") == 10**12 and parse_tokens("20B") == 2 * 10**10 and parse_tokens("1.5K") == 1500
    assert parse_tokens(1e12) == 10**12 and parse_tokens("2e9") == 2 * 10**9
    for bad in ("-1B", "abc", "0", True, "1.5"):
        with pytest.raises(FreqlabError):
            parse_tokens(bad)


def test_two_stage_schedule_adds_scaled_frequencies(corpus):
    (corpus / "s.yaml").write_text(
        "histogram: main.parquet\n"
        "stages:\n"
        "  - {name: pre, L: 2048, tokens: 1T}\n"
        "  - {name: long, L: 8192, tokens: 20B, regime: concat, histogram: long.parquet}\n"
    )
    result = schedule_frequency(load_schedule(corpus / "s.yaml"))
    assert result.window == 8192
    pre = position_frequency([512, 3000, 20000], [100, 10, 2], 2048)
    long = position_frequency([9000], [5], 8192, "concat")
    expected = np.zeros(8192)
    expected[:2048] += pre * (1e12 / pre[0])
    expected += long * (2e10 / long[0])
    assert np.allclose(result.total, expected, rtol=1e-12)
    # exact occurrences at a position only the long stage reaches
    assert result.occurrences(5000) == pytest.approx(float(long[5000]) * 2e10 / float(long[0]))
    eff = result.effective_length(1e9)
    assert expected[eff] >= 1e9 > expected[eff + 1]


def test_a_schedule_file_path_is_a_schedule_and_the_result_shows_itself_briefly(corpus):
    """A new user's ``schedule_frequency("schedule.yaml")`` met AttributeError ('str' object has no attribute
    'stages'), its repr was a 6,395-character dataclass dump, and ``load_preset`` without a histogram named a
    stage's missing histogram."""
    from freqlab.frequency.schedule import load_preset

    (corpus / "s.yaml").write_text(
        "histogram: main.parquet\nstages:\n  - {name: pre, L: 2048, tokens: 1T}\n"
        "  - {name: long, L: 8192, tokens: 20B, regime: concat, histogram: long.parquet}\n"
    )
    by_path = schedule_frequency(str(corpus / "s.yaml"))
    loaded = schedule_frequency(load_schedule(corpus / "s.yaml"))
    assert np.array_equal(by_path.total, loaded.total) and by_path.effective_length() == loaded.effective_length()
    first, *rest = repr(by_path).splitlines()
    effective = by_path.effective_length()
    assert first.endswith(f"2 stages, 1.02T tokens, longest window 8,192; effective length {effective:,} at tau = 100B")
    assert rest == [] and len(repr(by_path)) < 1024
    assert "stage 2 (long)" in by_path._repr_html_() and "L = 8,192, 20B tokens, concat" in by_path._repr_html_()
    gemma = schedule_frequency(load_preset("gemma3", histogram=corpus / "main.parquet"))
    swa, globals_ = gemma.kind_names
    assert repr(gemma).splitlines()[1] == (
        f"swa1K {gemma.effective_length(kind=swa):,}, global {gemma.effective_length(kind=globals_):,}"
    )
    with pytest.raises(FreqlabError, match=r"^schedule_frequency takes a Schedule or .*, got int$"):
        schedule_frequency(3)
    with pytest.raises(FreqlabError, match=r"^preset llama3: a preset names no corpus: give histogram="):
        load_preset("llama3")


def test_stages_of_histograms_counted_with_different_tokenizers_are_refused(tmp_path):
    """A review's schedule added f of a Tekken histogram and a Llama 3 one without a word."""
    LengthHistogram.from_lengths([512] * 3, meta={"tokenizer_vocab_hash": "7d3d"}).to_parquet(tmp_path / "a.parquet")
    LengthHistogram.from_lengths([900], meta={"tokenizer_vocab_hash": "80c2"}).to_parquet(tmp_path / "b.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: a.parquet\n"
        "stages:\n"
        "  - {name: pre, L: 2048, tokens: 1T}\n"
        "  - {name: long, L: 8192, tokens: 20B, regime: pack, histogram: b.parquet}\n"
    )
    with pytest.raises(FreqlabError) as error:
        schedule_frequency(load_schedule(tmp_path / "s.yaml"))
    assert str(error.value) == (
        f"stage 'pre' ({tmp_path / 'a.parquet'}) (tokenizer_vocab_hash '7d3d') and stage 'long' "
        f"({tmp_path / 'b.parquet'}) ('80c2'): histograms of different tokenizers do not add up (their lengths are in "
        "different units; one tokenizer loaded from two files, a tokenizer.json and a tokenizer.model, hashes two "
        "ways: scan both with one file)"
    )
    # each stage is scaled to its own budget: a sample beside a whole scan is a stage like any (a review)
    LengthHistogram.from_lengths([900], meta={"tokenizer_vocab_hash": "7d3d", "sample_rate": 0.5}).to_parquet(
        tmp_path / "b.parquet"
    )
    assert schedule_frequency(load_schedule(tmp_path / "s.yaml")).window == 8192


def test_json_schedules_and_histogram_override(corpus):
    (corpus / "s.json").write_text('{"stages": [{"L": 1024, "tokens": "100B"}]}')
    result = schedule_frequency(load_schedule(corpus / "s.json", histogram=corpus / "long.parquet"))
    assert result.frequencies[0].tolist() == position_frequency([9000], [5], 1024).tolist()


def test_a_schedule_files_tau_stays_a_whole_number(tmp_path):
    """tau 2^53 + 3 in the file was read as a float (2^53 + 4): F(1) = (2^54 + 6) / 2 = 2^53 + 3 reaches it, so the
    effective length is 1, as with --tau, but the file's tau gave 0; the JSON wrote tau rounded too."""
    LengthHistogram.from_counts([2], [1]).to_parquet(tmp_path / "two.parquet")
    tau = 2**53 + 3
    (tmp_path / "s.yaml").write_text(
        f"histogram: two.parquet\ntau: {tau}\nstages:\n  - {{name: s, L: 2, tokens: {2**54 + 6}}}\n"
    )
    schedule = load_schedule(tmp_path / "s.yaml")
    assert schedule.tau == tau and type(schedule.tau) is int
    result = schedule_frequency(schedule)
    assert result.occurrences(1) == Fraction(2**54 + 6, 2) and result.effective_length() == 1
    assert result.to_dict()["tau"] == tau and result.effective_length(tau + 1) == 0
    (tmp_path / "big.yaml").write_text("histogram: two.parquet\ntau: 1e19\nstages:\n  - {L: 2, tokens: 1B}\n")
    with pytest.raises(FreqlabError, match=r"tau must be .* a whole number from 1 to 2\^63 - 1 .*got '1e19'"):
        load_schedule(tmp_path / "big.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stages: []", "non-empty list 'stages'"),
        ("stages:\n" + "  - {L: 8, tokens: 1B}\n" * 1001, "1,001 stages, more than 1,000: merge the stages"),
        (
            "stages:\n  - {L: 0, tokens: 1B}",
            r"stage 1 \(stage-1\): L: a length in positions must be a positive integer",
        ),
        # parse_positions' own words (a review: "L must be a positive integer (e.g. 2048 or 2K), got '1G'")
        (
            "stages:\n  - {L: 1G, tokens: 1B}",
            r"L: not a length in positions: '1G' \(use e.g. 2048, 2K or 128K \(K = 1024\)\)",
        ),
        ("stages:\n  - {tokens: 1B}", r"stage 1 \(stage-1\): missing 'L' \(its window, e.g. 2048 or 2K\)$"),
        ("stages:\n  - {L: null, tokens: 1B}", r"L must be a positive integer \(e.g. 2048 or 2K\), got None$"),
        ("stages:\n  - {L: 2048}", "missing 'tokens'"),
        ("stages:\n  - {L: 2048, tokens: 1B, regime: zigzag}", "unknown regime 'zigzag'"),
        ("stages:\n  - {L: 2048, tokens: 1B, windw: 3}", "unknown key"),
        # the stage's name and the key meant (a review: "stage 1: unknown key(s) regmie")
        (
            "stages:\n  - {name: a, L: 2K, tokens: 1B, regmie: pack}",
            r"stage 1 \(a\): unknown key\(s\) regmie \(did you mean regime\?\)$",
        ),
        ("stagse: []\nstages:\n  - {L: 2K, tokens: 1B}", r"unknown key\(s\) stagse \(did you mean stages\?\)$"),
        ("stages:\n  - {L: 2048, tokens: 1B}", "no histogram"),
        ("stages: [", "not valid YAML"),
        ("stages:\n  - {L: 2048, tokens: 1B, L: 4096}", r"key 'L' given twice, line 2"),  # not the last silently
        (b"\xff\xfe", "not a UTF-8 text file"),
        # bounded as --L and --tokens (a review: tracebacks, and 1e30 tokens printed as 10^18 T)
        ("stages:\n  - {L: 1e400, tokens: 1B}", r"stage 1 \(stage-1\): L = '1e400' is larger than freqlab supports"),
        ("stages:\n  - {L: 2048M, tokens: 1B}", r"L = '2048M' is larger than freqlab supports \(2\^30\)"),
        ("stages:\n  - {L: 2K, tokens: 1e400}", r"stage 1 \(stage-1\): tokens = '1e400' is past 2\^63 - 1"),
        ("stages:\n  - {L: 2K, tokens: 1e30}", r"tokens = '1e30' is past 2\^63 - 1"),
    ],
)
def test_bad_schedules_name_the_stage_and_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    with pytest.raises(FreqlabError, match=message):
        load_schedule(tmp_path / "bad.yaml")


# --- staged recipes: layouts, delegated curricula and position ids, provenance, the reach table ------------------


def test_stages_with_a_layout_report_f_per_layer_kind_and_the_share_beyond_earlier_windows(tmp_path):
    from freqlab.frequency.layouts import LayerKind

    LengthHistogram.from_counts([8], [3]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nlayout: swa2+global+nope\n"
        "stages:\n  - {name: short, L: 4, tokens: 100}\n  - {name: long, L: 8, tokens: 50}\n"
    )
    result = schedule_frequency(load_schedule(tmp_path / "s.yaml"))
    swa, glob = LayerKind("swa", 2), LayerKind("global")
    assert [k.name for k in result.kind_names] == ["swa2", "global", "nope"]
    assert result.stage_kinds(1)[glob].tolist() == [24, 21, 18, 15, 12, 9, 6, 3]
    assert result.stage_kinds(1)[swa].tolist() == [24, 21, 0, 0, 0, 0, 0, 0]
    # the long stage trained 50 tokens; those with >= 4 tokens of context: f(4) / f(0) = 12 / 24 of them
    assert result.reached(1, glob, 4) == 25
    table = {(row["stage"], row["kind"]): row["beyond"] for row in result.reach_table()}
    assert table[("long", "global")] == {"4": 25 / 150} and table[("long", "swa2")] == {"4": 0.0}
    assert table[("short", "global")] == {}
    # effective length after each stage, per kind: exact
    assert result.effective_length(30, glob, stages=1) == 2  # F = 100 (4 - i) / 4 = 100, 75, 50, 25
    assert result.effective_length(60, glob, stages=1) == 1
    assert result.effective_length(30, swa) == 1


def two_stages(tmp_path, first: str, second: str):
    """schedule_frequency of two stages (YAML flow mappings: name, L, tokens, layout) on 3 documents of 8 tokens."""
    LengthHistogram.from_counts([8], [3]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(f"histogram: h.parquet\nstages:\n  - {first}\n  - {second}\n")
    return schedule_frequency(load_schedule(tmp_path / "s.yaml"))


def test_a_stage_without_a_layout_trains_every_layer_kind_as_global_and_the_last_layout_caps_the_reach(tmp_path):
    """A layout named in the last stage only: the stage before it, without a layout, trains every layer with full
    attention, so the layers that become swa2 trained its f there; they counted 0 for it, an effective length of 0
    after 100 tokens of global training (new user). Their effective length is capped at their reach, w - 1 = 1, when
    the last stage makes them sliding; a last stage without a layout leaves them global."""
    from freqlab.frequency.layouts import LayerKind

    result = two_stages(
        tmp_path, "{name: short, L: 4, tokens: 100}", "{name: long, L: 8, tokens: 50, layout: swa2+global+nope}"
    )
    swa, glob, nope = LayerKind("swa", 2), LayerKind("global"), LayerKind("nope")
    short_f = [24, 18, 12, 6]  # 6 rows of 4 tokens: f(i) = 6 (4 - i), as the global layers get
    assert result.stage_kinds(0)[glob].tolist() == result.stage_kinds(0)[swa].tolist() == short_f
    assert result.stage_kinds(0)[nope] is None
    assert result.kind_total(swa, 1).tolist() == result.kind_total(glob, 1).tolist() == [100, 75, 50, 25, 0, 0, 0, 0]
    assert result.reach_cap(swa) == 1 and result.reach_cap(glob) is None
    assert result.effective_length(30, swa) == 1  # F reaches 30 up to 2; the swa2 layers attend 0..1
    # sliding first, global at the end: no cap
    result = two_stages(
        tmp_path, "{name: short, L: 4, tokens: 100, layout: swa2+global}", "{name: long, L: 8, tokens: 50}"
    )
    # the last stage's layers are all global, half of them sliding before: two tracks of the one final kind
    tracks = {kind.name: kind for kind in result.kind_names}
    assert list(tracks) == ["global (was swa2)", "global (was global)"]
    was_swa, was_global = tracks.values()
    assert result.kind_total(was_swa).tolist() == [150, 118.75, 37.5, 31.25, 25, 18.75, 12.5, 6.25]
    assert result.kind_total(was_global).tolist() == [150, 118.75, 87.5, 56.25, 25, 18.75, 12.5, 6.25]
    assert (result.effective_length(40, was_swa), result.effective_length(40, was_global)) == (1, 3)
    assert result.reach_cap(was_swa) is None and result.reach_cap(was_swa, stages=1) == 1  # swa2 after stage 1
    # asked for by the final kind alone: which of its tracks is meant (it answered 0; second adversary review)
    with pytest.raises(FreqlabError, match=r"in 2 ways: ask for one of global \(was swa2\), global \(was global\)"):
        result.effective_length(40, glob)
    with pytest.raises(FreqlabError, match="no swa2 layers in the last stage's layout"):
        result.kind_total(swa)


def test_a_last_layout_of_nope_layers_only_says_no_layer_of_the_model_uses_the_positions(tmp_path):
    """A review: the stage before, without a layout, read "of full attention, no layer here" and the totals "which
    no stage's layout has", though every layer trained with full attention there; they end NoPE, which is why."""
    result = two_stages(tmp_path, "{name: short, L: 4, tokens: 100}", "{name: long, L: 8, tokens: 50, layout: 2*nope}")
    data = result.to_dict()
    assert data["rope_layers"] is False and [stage["full_attention"] for stage in data["stages"]] == [False, False]
    report = result.report()
    assert report.count("alone (of full attention, which the last stage's NoPE layers do not use") == 2
    assert report.count("after it: no rotary layers") == 2
    assert "no layer here" not in report and "which no stage's layout has" not in report
    assert (
        "(of full attention, which no stage's layout has: its layers below)"
        in two_stages(
            tmp_path, "{name: short, L: 4, tokens: 100, layout: swa2}", "{name: long, L: 8, tokens: 50, layout: swa2}"
        ).report()
    )


def test_a_window_that_widens_between_stages_counts_the_narrower_one_for_the_same_layers(tmp_path):
    """swa2+global then swa4+global: the layers that end as swa4 trained as swa2 first. They were counted as two
    kinds, swa4 with nothing from the first stage (effective length 0) and swa2, which the final model has not
    (adversary review); and the cap after a stage was the last stage's (3 where the layers were still global)."""
    from freqlab.frequency.layouts import LayerKind

    result = two_stages(
        tmp_path,
        "{name: a, L: 8, tokens: 100, layout: swa2+global}",
        "{name: b, L: 8, tokens: 50, layout: swa4+global}",
    )
    swa4, glob = LayerKind("swa", 4), LayerKind("global")
    assert result.kind_names == [swa4, glob]
    # f = 3 (8 - i), scaled by T / 24: swa2 keeps i < 2 in stage a, swa4 i < 4 in stage b
    assert result.kind_total(swa4).tolist() == [150, 131.25, 37.5, 31.25, 0, 0, 0, 0]
    assert result.effective_length(60, swa4) == 1
    # global first: the cap after it is none, after the last stage swa4's
    result = two_stages(tmp_path, "{name: a, L: 8, tokens: 100}", "{name: b, L: 8, tokens: 50, layout: swa4+global}")
    assert (result.effective_length(30, swa4, stages=1), result.effective_length(30, swa4)) == (5, 3)


def test_a_model_config_as_a_layout_gives_the_layers_walked(tmp_path):
    """A config lists every layer (Gemma 3 with 8 layers: 5 sliding, 1 global, 2 sliding); beside a pattern of 6,
    the layers walked were lcm(6, 8) = 24, and layers 8..23, which the model has not, made up histories such as
    'global (was swa4)' (second adversary review). The config's 8 layers are walked; configs of two layer counts
    are refused. NoPE layers are not split by what they were."""
    import json

    from freqlab.frequency.layouts import LayerKind

    config = {"model_type": "gemma3_text", "num_hidden_layers": 8, "sliding_window": 4}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = two_stages(
        tmp_path,
        "{name: a, L: 8, tokens: 100, layout: 5*swa4+global}",
        "{name: b, L: 8, tokens: 50, layout: config.json}",
    )
    assert result.kind_names == [LayerKind("swa", 4), LayerKind("global")]
    (tmp_path / "other.json").write_text(json.dumps({**config, "num_hidden_layers": 12}))
    with pytest.raises(FreqlabError, match="the stages' model configs have 8 and 12 layers"):
        two_stages(
            tmp_path,
            "{name: a, L: 8, tokens: 100, layout: other.json}",
            "{name: b, L: 8, tokens: 50, layout: config.json}",
        )
    # layers 0 and 2 end NoPE, one was sliding and one global: 'nope (was swa4)' and 'nope (was global)' before
    result = two_stages(
        tmp_path,
        "{name: a, L: 8, tokens: 100, layout: swa4+3*global}",
        "{name: b, L: 8, tokens: 50, layout: nope+global}",
    )
    assert [kind.name for kind in result.kind_names] == ["nope", "global"]


def test_numbers_carry_their_source_or_an_assumed_mark(tmp_path):
    LengthHistogram.from_counts([8], [3]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\n"
        "stages:\n"
        "  - name: a\n"
        "    L: {value: 8, source: 'paper, Sec. 3'}\n"
        "    tokens: {value: 1B, assumed: 'not stated: an even split'}\n"
    )
    stage = load_schedule(tmp_path / "s.yaml").stages[0]
    assert (stage.L, stage.tokens) == (8, 10**9)
    assert stage.provenance == (("L", "source: paper, Sec. 3"), ("tokens", "assumed: not stated: an even split"))
    assert stage.assumed == ("tokens",)
    (tmp_path / "bad.yaml").write_text(
        "histogram: h.parquet\nstages:\n  - {L: {value: 8, source: x, assumed: y}, tokens: 1}\n"
    )
    with pytest.raises(FreqlabError, match=r"L takes \{value, source\} or \{value, assumed\}"):
        load_schedule(tmp_path / "bad.yaml")
    # a provenance mistyped was read as the number itself: "L: not a length in positions: {...}" (a review)
    for typo in ("sorce", "sourc", "asumed"):
        (tmp_path / "typo.yaml").write_text(
            f"histogram: h.parquet\nstages:\n  - {{L: {{value: 8, {typo}: x}}, tokens: 1}}\n"
        )
        right = "assumed" if typo == "asumed" else "source"
        with pytest.raises(FreqlabError, match=rf"L takes .* \(unknown key\(s\) '{typo}', did you mean '{right}'\?\)$"):
            load_schedule(tmp_path / "typo.yaml")
    (tmp_path / "weights.yaml").write_text(  # a source named "value" beside another stays two sources
        "histogram: h.parquet\nstages:\n  - {L: 8, tokens: 1, weights: {value: 2, sources: 1}}\n"
    )  # "sources" nearly spells "source", but weighs a source
    assert load_schedule(tmp_path / "weights.yaml").stages[0].weights is not None
    (tmp_path / "weights.yaml").write_text(  # as shares, in text (a second review)
        "histogram: h.parquet\nweights: {value: '30%', sources: '70%'}\nstages:\n  - {L: 8, tokens: 1}\n"
    )
    assert load_schedule(tmp_path / "weights.yaml").stages[0].weights is not None


class _Exact:  # the agreed ExactFrequency contract: numerator (int64) over one denominator
    def __init__(self, numerator, denominator):
        self.numerator, self.denominator = np.asarray(numerator, dtype=np.int64), denominator


class _HalfWindow:
    """A stub curriculum: half of the stage's tokens at window L // 2, half at L, natural; expectation over two
    equally likely windows, so numerator f(L/2) + f(L) over denominator 2."""

    def mix_documents(self, regime):  # walks no documents: a source mix may hold any number
        return None

    def frequency(self, lengths, counts, L, regime, seed=0, stage_tokens=None):  # no steps: stage_tokens unused
        half = np.zeros(L, dtype=np.int64)
        half[: L // 2] = position_frequency(lengths, counts, L // 2, regime)
        return _Exact(half + position_frequency(lengths, counts, L, regime), 2)


class _Skip:
    """A stub position-id method: every segment's position ids doubled, so differences reach 2L - 2."""

    def mix_documents(self, regime):  # walks no documents: a source mix may hold any number
        return None

    def frequency(self, lengths, counts, L, regime, seed=0):
        f = position_frequency(lengths, counts, L, regime)
        out = np.zeros(2 * L, dtype=np.int64)
        out[::2] = f
        return _Exact(out, 1)


@pytest.fixture
def delegated(monkeypatch):
    import freqlab.frequency.schedule as schedule_module

    monkeypatch.setattr(schedule_module, "curriculum_from_spec", lambda spec: _HalfWindow())
    monkeypatch.setattr(schedule_module, "position_ids_from_spec", lambda spec: _Skip())


def test_curriculum_and_position_id_stages_are_delegated(tmp_path, delegated):

    LengthHistogram.from_counts([8], [1]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nlayout: swa3+global\n"
        "stages:\n"
        "  - {name: warmup, L: 8, tokens: 80, curriculum: {kind: stub}}\n"
        "  - {name: pose, L: 4, tokens: 40, position_ids: {kind: stub}, layout: global}\n"
    )
    result = schedule_frequency(load_schedule(tmp_path / "s.yaml"))
    warm = [8 + 8, 6 + 7, 4 + 6, 2 + 5, 4, 3, 2, 1]  # windows of 4: segments 4, 4
    assert result.frequencies[0].tolist() == warm
    # the last stage is global only: its layers that were swa3 in the warm-up are followed apart
    was_swa = next(kind for kind in result.kind_names if kind.name == "global (was swa3)")
    assert result.stage_kinds(0)[was_swa].tolist() == warm[:3] + [0] * 5
    assert result.frequencies[1].tolist() == [8, 0, 6, 0, 4, 0, 2, 0]
    assert result.window == 8
    assert result.occurrences(4) == Fraction(4 * 80, 16) + Fraction(4 * 40, 8)
    (tmp_path / "bad.yaml").write_text(
        "histogram: h.parquet\nlayout: swa3+global\nstages:\n  - {L: 4, tokens: 40, position_ids: {kind: stub}}\n"
    )
    with pytest.raises(FreqlabError, match="swa3 layers with a position_ids stage are not supported"):
        schedule_frequency(load_schedule(tmp_path / "bad.yaml"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("curriculum: {kind: warmup, start: 64, share: 0.5}", r"stage 1 \(w\): curriculum: warmup: start 64 is larger"),
        (
            "position_ids: {kind: pose, target: 8}",
            r"stage 1 \(w\): position_ids: pose: target 8 is shorter than the window",
        ),
        ("curriculum: {kind: nonsense}", r"stage 1 \(w\): curriculum: "),  # as parse_schedule names it (a review)
    ],
)
def test_a_bad_curriculum_or_position_ids_names_its_stage(tmp_path, spec, message):
    LengthHistogram.from_counts([40], [3]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(f"histogram: h.parquet\nstages:\n  - {{name: w, L: 16, tokens: 1T, {spec}}}\n")
    with pytest.raises(FreqlabError, match=message):
        schedule_frequency(load_schedule(tmp_path / "s.yaml"))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 30), st.integers(1, 3)), min_size=1, max_size=6, unique_by=lambda t: t[0]),
    st.integers(2, 12),
    st.integers(1, 6),
    st.sampled_from(["natural", "pack", "concat"]),
)
def test_reach_beyond_an_earlier_window_counts_tokens_by_their_context(pairs, L, w, regime):
    # brute force: the tokens of the long stage whose visible context (over the real masks) is at least W
    from frequency.reference import masked_pair_frequency, regime_rows

    from freqlab.frequency import stream_order
    from freqlab.frequency.layouts import LayerKind
    from freqlab.frequency.schedule import Schedule, Stage

    lengths, counts = zip(*pairs)
    h = LengthHistogram.from_counts(lengths, counts)
    short, long = (L + 1) // 2, L
    layout = parse_layout(f"swa{w}+global")
    stages = (Stage("short", short, 1000, regime, h, layout=layout), Stage("long", long, 700, regime, h, layout=layout))
    result = schedule_frequency(Schedule(stages))
    docs = (
        stream_order(np.array(h.lengths), np.array(h.counts), 0).tolist()
        if regime == "pack"
        else [int(n) for n, c in zip(h.lengths, h.counts) for _ in range(int(c))]
    )
    rows, mask = regime_rows(docs, long, regime)
    for kind, size in ((LayerKind("global"), 0), (LayerKind("swa", w), w)):
        _, exposure = masked_pair_frequency(rows, mask, long, kind.kind, size)
        beyond = sum(exposure[short:])
        assert result.reached(1, kind, short) == Fraction(beyond * 700, sum(exposure))


def test_a_pose_stage_reports_no_reach_share(tmp_path):
    """f(W)·T/f(0) counts tokens with at least W of context only when a query sees every distance up to its context:
    under PoSE the position ids skip (one 4-token document, L = 4, target 6: f(3)/f(0) = 7/24, while the expected
    share of tokens at position id >= 3 is 11/24), so its shares are None, never a wrong number."""
    from freqlab.frequency.pose import position_ids_from_spec

    f = position_ids_from_spec({"kind": "pose", "target": 6}).frequency([4], [1], 4, "natural")
    assert Fraction(f.value(3)) / Fraction(f.value(0)) == Fraction(7, 24)
    LengthHistogram.from_counts([4, 3000], [1, 2]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nstages:\n  - {name: base, L: 2K, tokens: 1B}\n"
        "  - {name: pose, L: 2K, tokens: 10M, position_ids: {kind: pose, target: 16K}}\n"
    )
    result = schedule_frequency(load_schedule(tmp_path / "s.yaml"))
    rows = {row["stage"]: row for row in result.reach_table()}
    assert rows["pose"]["beyond"] == {"2048": None}
    assert result.reach_is_exposure(0) and not result.reach_is_exposure(1)


def test_a_pose_stage_takes_no_regime_and_its_line_says_what_its_rows_are(tmp_path):
    """A review: regime: pack on a PoSE stage gave natural's numbers under a "pack" label (PoSE trains one row per
    document): a regime given is refused, and the stage's line shows none and says what the rows are."""
    LengthHistogram.from_counts([4, 3000], [1, 2]).to_parquet(tmp_path / "h.parquet")
    pose = "{name: pose, L: 2K, tokens: 10M, position_ids: {kind: pose, target: 16K}%s}"
    for regime in ("pack", "natural"):
        (tmp_path / "s.yaml").write_text(f"histogram: h.parquet\nstages:\n  - {pose % (', regime: ' + regime)}\n")
        with pytest.raises(
            FreqlabError, match=rf"stage 1 \(pose\): a PoSE stage trains one row per document.*\('{regime}'\)"
        ):
            load_schedule(tmp_path / "s.yaml")
    (tmp_path / "s.yaml").write_text(f"histogram: h.parquet\nstages:\n  - {pose % ''}\n")
    (line,) = [
        line for line in schedule_frequency(load_schedule(tmp_path / "s.yaml")).report().splitlines() if "pose " in line
    ]
    assert " tokens  -         effective length" in line
    assert line.endswith(
        "(position ids: pose; one row per document, its first min(n, L) tokens: the stage's regime is not used)"
    )
    # a scaled stage's f is the unscaled one's: said beside it (a review: its numbers equal a plain run's, unsaid)
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nstages:\n"
        "  - {name: pi, L: 2K, tokens: 10M, position_ids: {kind: scaled, method: pi, factor: 8}}\n"
    )
    report = schedule_frequency(load_schedule(tmp_path / "s.yaml")).report()
    assert "(position ids: scaled; f counts token distances as unscaled: the scaling changes their angles" in report


def test_a_pose_replay_whose_F_rises_again_gets_the_largest_position_and_says_where_the_gap_is():
    """One 8-token document, PoSE to 16 replayed: F = [1000, 750, 500, 250, 125, 0, 0, 0, 0, 125, 250, 375, 375,
    375, 250, 125] (the skip leaves distances 5..8 untrained). The effective length is the largest i with F(i) >= tau
    (13, a bisection said 2); the report says every position reaches tau only in 0..2, and N* (every position
    well trained) is 3."""
    from freqlab.plan.well_trained import well_trained_range

    spec = {"kind": "pose", "target": 16, "replay": True}
    schedule = parse_schedule(
        {"stages": [{"name": "p", "L": 8, "tokens": 1000, "position_ids": spec}], "tau": 300},
        histogram=LengthHistogram.from_counts([8], [1], corpus="toy"),
    )
    result = schedule_frequency(schedule, seed=5)
    assert result.total.tolist() == [1000, 750, 500, 250, 125, 0, 0, 0, 0, 125, 250, 375, 375, 375, 250, 125]
    data = result.to_dict()
    assert (data["effective_length"], data["stages"][0]["effective_length_alone"]) == (13, 13)
    assert data["reached_without_gap"] == 3
    assert "F dips below τ before that: every position reaches it only in 0..2" in result.report()
    assert well_trained_range(16, schedule=result).N == 3


def test_a_pose_expectation_past_what_a_float_holds_is_scaled_without_overflow():
    """800 distinct lengths: the exact PoSE expectation's common denominator makes numerators of 2,651 bits, past a
    float's 1024; scaling f_k·T_k/f_k(0) with float(f(0)) raised OverflowError (the built-in corpus with a PoSE stage
    crashed `freqlab schedule`). The totals, effective length and report now come out, equal to exact fractions."""
    h = LengthHistogram.from_counts(np.arange(1, 801), np.ones(800, dtype=np.int64), corpus="toy")
    stage = {"name": "p", "L": 1024, "tokens": 10**9, "position_ids": {"kind": "pose", "target": 2048}}
    result = schedule_frequency(parse_schedule({"stages": [stage], "tau": 10**6}, histogram=h))
    f = result.frequencies[0]
    assert f.dtype == object and int(f[0]).bit_length() > 1024
    exact = [Fraction(int(x) * 10**9, int(f[0])) for x in f]
    np.testing.assert_allclose(result.total, [float(x) for x in exact], rtol=1e-12)
    assert result.effective_length() == max(i for i, x in enumerate(exact) if x >= 10**6)
    assert "effective length" in result.report()


def test_a_stage_whose_tokens_are_at_most_tau_says_why_its_effective_length_is_0():
    """f_T(0) = T and f_T(i) < T past 0: at T = tau no position past 0 reaches it either (a review: SkyLadder's
    100B-token stage at tau = 100B printed 0 with no reason)."""
    stages = [{"name": "short", "L": 8, "tokens": 50}, {"name": "equal", "L": 8, "tokens": 100}]
    schedule = parse_schedule(
        {"stages": [*stages, {"name": "long", "L": 8, "tokens": 500}], "tau": 100},
        histogram=LengthHistogram.from_counts([8], [1], corpus="toy"),
    )
    lines = schedule_frequency(schedule).report().splitlines()
    # a second review: "0" is no position below tau and position 0 at tau, which the note now tells apart
    short = "effective length alone (its 50 tokens < τ: no position reaches τ): 0"
    assert short in next(line for line in lines if "short" in line)
    equal = "effective length alone (its 100 tokens = τ: position 0 alone reaches τ): 0"
    assert equal in next(line for line in lines if "equal" in line)
    assert "τ:" not in next(line for line in lines if " long " in line)


def test_a_pose_stage_beyond_int64_keeps_its_exact_expectation(tmp_path):
    """PoSE on a large corpus gives an expectation whose numerator passes 2^63: kept as Python integers, F(i) is the
    exact T · f(i) / f(0) at every position (it was float64, off in the last digits at 22 of 23 positions)."""
    from freqlab.frequency.pose import position_ids_from_spec
    from freqlab.frequency.schedule import parse_schedule

    lengths, counts, L, target, T = [3, 5, 7, 9, 11], [2**58, 2**57, 2**56, 3, 2**55], 11, 23, 10**12
    h = LengthHistogram.from_counts(lengths, counts)
    # a window of 16 tokens (L <= 16 < target): a row holds at most L tokens, so the layer is global
    stage = {"L": L, "tokens": T, "position_ids": {"kind": "pose", "target": target}, "layout": "swa16+global"}
    result = schedule_frequency(parse_schedule({"stages": [stage], "tau": 1}, histogram=h))
    exact = position_ids_from_spec({"kind": "pose", "target": target}).frequency(lengths, counts, L)
    assert result.frequencies[0].dtype == object
    expected = [exact.value(i) * T / exact.value(0) for i in range(target)]
    assert [result.occurrences(i) for i in range(target)] == expected
    assert result.effective_length(tau=expected[22]) == 22
    assert result.to_dict()["stages"][0]["effective_length_alone"] == 22
    kinds = result.stage_kinds(0)
    assert [k.name for k in kinds] == ["swa16", "global"] and all(f is result.frequencies[0] for f in kinds.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sources": {"a": 1}}, r"s\.yaml: sources must be text, got \{'a': 1\}"),  # `sources: 5` was a traceback
        ({"notes": {"a": 1}}, r"s\.yaml: notes must be text, got \{'a': 1\}"),  # was the note "a"
        ({"notes": ["fine", None]}, r"s\.yaml: notes\[1\] must be text, got None"),
        ({"title": ["x"]}, r"s\.yaml: title must be text"),
        ({"stages": [{"name": " ", "L": 8, "tokens": 10}]}, r"stage 1: name is empty"),
        ({"stages": [{"name": [1, 2], "L": 8, "tokens": 10}]}, r"stage 1: name must be text, got \[1, 2\]"),
        ({"stages": [{"name": "a", "L": 8, "tokens": 10}, {"name": "a", "L": 16, "tokens": 10}]},
         r"stage 2: its name 'a' is the name of an earlier stage too"),
    ],
)  # fmt: skip
def test_schedule_texts_of_the_wrong_type_are_one_line_naming_the_file(tmp_path, change, message):
    data = {"histogram": "h.parquet", "stages": [{"name": "a", "L": 8, "tokens": 10}], **change}
    with pytest.raises(FreqlabError, match=message):
        parse_schedule(data, source=str(tmp_path / "s.yaml"))
    assert parse_schedule({**data, "stages": [{"name": 2024, "L": 8, "tokens": 10}], "sources": None,
                           "notes": "one", "title": None}, source="s").stages[0].name == "2024"  # fmt: skip
    good = {"histogram": "h.parquet", "stages": [{"name": "a", "L": 8, "tokens": 10}], "sources": 5}
    assert parse_schedule(good, source="s").sources == ("5",)
    dated = {**good, "stages": [{"name": datetime.date(2024, 1, 1), "L": 8, "tokens": 10}]}  # YAML's 2024-01-01
    assert parse_schedule(dated, source="s").stages[0].name == "2024-01-01"
    unnamed = {**good, "stages": [{"name": "stage-2", "L": 8, "tokens": 10}, {"L": 8, "tokens": 10}]}
    with pytest.raises(FreqlabError, match=r"stage 2: its default name \(give it a name\) 'stage-2'"):
        parse_schedule(unnamed, source="s")


def test_a_stages_weights_file_is_read_next_to_the_schedule_never_from_the_working_folder(tmp_path, monkeypatch):
    """weights: mix.yaml, missing beside the schedule: the working folder's mix.yaml was applied without a word."""
    from freqlab.histogram import combine_sources

    (tmp_path / "sch").mkdir()
    parts = {
        "a": LengthHistogram.from_counts([100, 3000], [50, 5]),
        "b": LengthHistogram.from_counts([200, 6000], [40, 2]),
    }
    combine_sources(parts).to_parquet(tmp_path / "sch" / "src.parquet")
    (tmp_path / "sch" / "s.yaml").write_text(
        "histogram: src.parquet\nstages:\n  - {name: s, L: 2048, tokens: 1T, weights: mix.yaml}\n"
    )
    (tmp_path / "mix.yaml").write_text("unit: epochs\nweights: {a: 1, b: 9}\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FreqlabError, match=r"sch/mix\.yaml: no such mixture file"):
        schedule_frequency(load_schedule("sch/s.yaml"))
    (tmp_path / "sch" / "mix.yaml").write_text("unit: epochs\nweights: {a: 1, b: 9}\n")
    assert schedule_frequency(load_schedule("sch/s.yaml")).effective_length() > 0
    # a name without a suffix too; a preset's name is the preset, as --weights reads it, whatever files exist
    (tmp_path / "mymix").write_text("unit: epochs\nweights: {a: 1, b: 9}\n")
    (tmp_path / "sch" / "s.yaml").write_text(
        "histogram: src.parquet\nstages:\n  - {name: s, L: 2048, tokens: 1T, weights: mymix}\n"
    )
    with pytest.raises(FreqlabError, match=r"sch/mymix: no such mixture file"):
        load_schedule("sch/s.yaml")
    (tmp_path / "sch" / "slimpajama").write_text("not a mixture")
    (tmp_path / "sch" / "s.yaml").write_text(
        "histogram: src.parquet\nstages:\n  - {name: s, L: 2048, tokens: 1T, weights: slimpajama}\n"
    )
    assert load_schedule("sch/s.yaml").stages[0].weights == "slimpajama"


@pytest.mark.parametrize(
    ("weights", "message"),
    [({}, "{} names no weights"), ("", "'' names no weights"), ("  ", "'  ' names no weights"),
     ([], "[] is not weights"), (["a"], "['a'] is not weights"), (True, "True is not weights"),
     (0, "0 is not weights"), ((), "() is not weights")],
)  # fmt: skip
def test_weights_that_name_no_mix_are_refused_naming_the_stage(weights, message):
    """A review: ``weights: {}`` ran with no weights, unsaid, and ``weights: ""`` said "an empty path names no file
    or folder" without the file or stage."""
    h = LengthHistogram.from_counts([8], [3])
    stage = {"name": "a", "L": 8, "tokens": 100, "weights": weights}
    with pytest.raises(FreqlabError) as caught:
        parse_schedule({"stages": [stage]}, source="s.yaml", histogram=h)
    assert str(caught.value).startswith(f"s.yaml: stage 1 (a): weights: {message}; weights are SOURCE=W,...")
    assert str(caught.value).endswith("; or leave it out")
    from freqlab.histogram import combine_sources

    split = combine_sources(
        {"a": LengthHistogram.from_counts([3, 8], [2, 1]), "b": LengthHistogram.from_counts([5], [3])}
    )
    given = parse_schedule({"stages": [{**stage, "weights": None}]}, source="s.yaml", histogram=split,
                           weights={"a": 1, "b": np.float32(0.3)})  # fmt: skip
    assert given.stages[0].weights == "a=1,b=0.3"  # Python's weights= too: a mapping was a TypeError later (a review)
    with pytest.raises(FreqlabError, match=r"^weights: '' names no weights"):  # "" was no weights, unsaid
        parse_schedule({"stages": [{**stage, "weights": None}]}, source="s.yaml", histogram=split, weights="")
    with pytest.raises(FreqlabError, match=r"^s\.yaml: weights: \{\} names no weights"):  # the default's too
        parse_schedule({"weights": {}, "stages": [{**stage, "weights": None}]}, source="s.yaml", histogram=h)


def test_a_layout_for_the_stages_that_name_none_is_refused_where_every_stage_names_one(tmp_path):
    """`schedule --preset gemma3 --layout global` ran as if no layout were given (second adversary review): the
    preset's own layout is its default, which the layout given replaces (its source with it); a schedule whose
    every stage names its layout refuses it."""
    from freqlab.frequency.schedule import load_preset

    gemma = load_preset("gemma3", histogram=LengthHistogram.from_counts([8], [3]))
    assert "layout" in dict(gemma.provenance)
    replaced = gemma.with_layout("global")
    assert {stage.layout.spec for stage in replaced.stages} == {"global"} and "layout" not in dict(replaced.provenance)
    # a review: its notes still said "Sliding-window layers reach at most 1023 positions" of layers no longer there
    assert replaced.notes[0] == (
        "Sliding-window layers reach at most 1023 positions by construction, whatever the stage's window. "
        "[written for the layout 5*swa1K+global]"
    )
    again = replaced.with_layout("swa512")  # an adversary: marked a second time, for "global", which it was not
    assert again.notes == replaced.notes and gemma.with_layout(gemma.layout.spec).notes == gemma.notes
    LengthHistogram.from_counts([8], [3]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text("histogram: h.parquet\nstages:\n  - {L: 8, tokens: 1K, layout: swa2+global}\n")
    with pytest.raises(FreqlabError, match=r"s\.yaml: every stage names its layout, so a layout given for"):
        load_schedule(tmp_path / "s.yaml").with_layout("global")


def test_a_layout_given_replaces_the_files_default_layout(tmp_path):
    """A review: a file's top-level layout: then --layout was refused as "every stage names its layout", though
    none did; the layout given replaces the file's default, as --hist and --weights replace theirs."""
    LengthHistogram.from_counts([8], [3]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nlayout: swa4+global\nstages:\n  - {L: 8, tokens: 1K}\n"
        "  - {L: 8, tokens: 1K, layout: swa2+global}\n"
    )
    schedule = load_schedule(tmp_path / "s.yaml").with_layout("3*global")
    assert [stage.layout.spec for stage in schedule.stages] == ["3*global", "swa2+global"]


def test_a_stages_bad_weights_are_said_of_where_they_were_given():
    """Two reviews: a stage's weights missing a source said "--weights: no weight for source 'y'" (no such option
    given); then weights given with --weights, or as the file's default, were blamed on the first stage."""
    from freqlab.histogram import combine_sources

    h = combine_sources({"x": LengthHistogram.from_lengths([10, 300]), "y": LengthHistogram.from_lengths([20])})
    stage = {"name": "warm", "L": 64, "tokens": "1B"}
    cases = [
        (
            {"stages": [{**stage, "weights": "x=1"}]},
            None,
            r"^s\.yaml: stage 1 \(warm\): weights: no weight for source 'y'",
        ),
        ({"stages": [{**stage, "weights": "x=1,"}]}, None, r"^s\.yaml: stage 1 \(warm\): weights 'x=1,': '' is not"),
        ({"stages": [{**stage, "weights": "x=1,y=-1"}]}, None, r"^s\.yaml: stage 1 \(warm\): weights: weight of 'y'"),
        ({"stages": [stage], "weights": "x=1"}, None, r"^s\.yaml: weights: no weight for source 'y'"),
        ({"stages": [stage]}, "x=1", r"^--weights: no weight for source 'y'"),
        ({"stages": [{**stage, "weights": "llama1"}]}, None, r"^s\.yaml: stage 1 \(warm\): weights: llama1: source"),
        ({"stages": [{**stage, "weights": "/nowhere/mix.yaml"}]}, None, r"^s\.yaml: stage 1 \(warm\): weights: .*mix"),
    ]
    for data, weights, message in cases:
        with pytest.raises(FreqlabError, match=message):  # when read (a missing file) or when weighted
            schedule_frequency(parse_schedule(data, source="s.yaml", histogram=h, weights=weights))


@pytest.mark.parametrize("layout", ["5*swa4+global", "3*chunk4+global"])
def test_a_pi_or_yarn_stage_counts_its_windowed_layers_as_its_regime_does(layout):
    """A review: a PI/YaRN stage (position ids kept, angles scaled) under 5*swa4+global was refused as if its
    position ids moved ("a swa mask counts token distances"); its f is the regime's over token distances, and so is
    each layer kind's: a window of 4 keeps distances 0..3, a chunk of 4 the pairs inside each row's chunks."""
    h = LengthHistogram.from_counts([3, 5, 9, 17], [4, 2, 2, 1])
    scaled = {"kind": "scaled", "method": "pi", "factor": 2}
    stages = [
        {"name": "pre", "L": 8, "tokens": 1000, "regime": "pack"},
        {"name": "ext", "L": 16, "tokens": 100, "regime": "pack", "position_ids": scaled},
    ]
    result = schedule_frequency(parse_schedule({"layout": layout, "stages": stages}, histogram=h))
    plain = {k.kind: k.f for k in layout_frequency(h.lengths, h.counts, 16, layout, "pack").kinds}
    got = result.stage_kinds(1)
    assert got.keys() == plain.keys() and all(np.array_equal(got[k], plain[k]) for k in plain)
    pack = position_frequency(h.lengths, h.counts, 16, "pack")  # 57 = the corpus's tokens, 45 pairs at distance 1
    assert pack[:6].tolist() == [57, 45, 33, 21, 15, 9]
    windowed = next(k for k in plain if k.kind != "global")
    expected = {"swa": [57, 45, 33, 21] + [0] * 12, "chunk": [57, 34, 16, 6] + [0] * 12}[windowed.kind]
    assert got[windowed].tolist() == expected


def test_a_dataset_decomposition_stage_takes_no_regime_either(tmp_path):
    """A review: regime: concat on a Dataset Decomposition stage was accepted, unused (its pieces replace the
    regime's rows: F the same under any regime), and shown in the stage's line."""
    LengthHistogram.from_lengths([5, 12, 30, 3, 3, 20, 40]).to_parquet(tmp_path / "h.parquet")
    dd = "{name: dd, L: 16, tokens: 500, curriculum: {kind: dataset-decomposition, buckets: [4, 16]}%s}"
    (tmp_path / "s.yaml").write_text(f"histogram: h.parquet\nstages:\n  - {dd % ', regime: concat'}\n")
    with pytest.raises(
        FreqlabError,
        match=r"stage 1 \(dd\): a Dataset Decomposition stage trains each document's "
        r"pieces of 2\^k \+ 1 tokens \(2\^k inputs\): its regime \('concat'\) would not be used; leave it out$",
    ):
        load_schedule(tmp_path / "s.yaml")
    (tmp_path / "s.yaml").write_text(f"histogram: h.parquet\nstages:\n  - {dd % ''}\n")
    result = schedule_frequency(load_schedule(tmp_path / "s.yaml"))
    (line,) = [line for line in result.report().splitlines() if "dd " in line]
    assert " tokens  -         effective length" in line
    assert result.to_dict()["stages"][0]["regime"] is None  # not "natural" in the JSON (a review)


@pytest.mark.parametrize("randomize", [False, True])
def test_a_stage_that_trains_no_token_is_refused_not_counted(randomize):
    """A review: Dataset Decomposition with its smallest bucket past every document made no piece; the stage added
    nothing to F yet its 1,000 tokens counted in the schedule's total (F(0) = 1,000 against 2,000 tokens)."""
    h = LengthHistogram.from_counts([3, 4], [5, 5])
    dd = {"kind": "dataset-decomposition", "buckets": [8, 8], "randomize": randomize}
    data = {
        "stages": [
            {"name": "a", "L": 8, "tokens": 1000, "regime": "concat"},
            {"name": "dd", "L": 8, "tokens": 1000, "curriculum": dd},
        ]
    }
    message = r"^s\.yaml: stage 2 \(dd\) trains no token of its histogram .* cannot train its 1,000 tokens"
    with pytest.raises(FreqlabError, match=message):
        schedule_frequency(parse_schedule(data, source="s.yaml", histogram=h))


#: the bounds a float64 source mix is kept to, lowered for the tests that walk such a mix (2^25 documents, 2^20 in a
#: replay, 2^30 rows: 150 s of walks on 2 cores at full size; the sizes do not change what is checked)
WALKED, REPLAYED, ROWS = 1 << 15, 1 << 10, 1 << 16


@pytest.fixture
def small_mix_bounds(monkeypatch):
    import freqlab.frequency.curricula as curricula
    import freqlab.frequency.mixture as mixture
    import freqlab.frequency.pose as pose
    from freqlab.frequency import regimes

    # as at full size: the rows a mix gives stay within half of what a walk takes
    assert regimes.WALKED_MIX_ROWS <= regimes.MAX_STREAM_DOCUMENTS // 2
    assert mixture.MAX_STREAM_DOCUMENTS == regimes.WALKED_MIX_DOCUMENTS
    for module in (curricula, pose):
        monkeypatch.setattr(module, "WALKED_MIX_DOCUMENTS", WALKED)
        monkeypatch.setattr(module, "REPLAYED_MIX_DOCUMENTS", REPLAYED)
    monkeypatch.setattr(mixture, "MAX_STREAM_DOCUMENTS", WALKED)
    monkeypatch.setattr(mixture, "WALKED_MIX_ROWS", ROWS)


@pytest.mark.parametrize(
    "change",
    [
        {"regime": "natural", "curriculum": {"kind": "warmup", "start": 2, "share": 0.5}},
        {"regime": "pack", "curriculum": {"kind": "skyladder", "share": 0.5, "start": 2}},
        {"position_ids": {"kind": "pose", "target": 128, "replay": True}},
        {
            "L": 512,
            "curriculum": {"kind": "dataset-decomposition", "buckets": [2, 512], "randomize": True, "replay": True},
        },
    ],
)
def test_a_stage_walking_documents_takes_a_fractional_mix_kept_to_a_bounded_stream(change, small_mix_bounds):
    """A review: weights a=70%,b=30% on a warm-up under natural (its rows are walked) was refused for walking
    2.3·10^10 rows, PoSE's and Dataset Decomposition's replays blamed "the pack regime": a stage that walks its
    documents takes the mix as the pack regime does (weighted_histogram(..., stream=True))."""
    from freqlab.frequency.curricula import curriculum_from_spec
    from freqlab.frequency.mixture import weighted_histogram
    from freqlab.frequency.pose import position_ids_from_spec
    from freqlab.histogram import combine_sources

    h = combine_sources({"x": LengthHistogram.from_lengths([10, 300]), "y": LengthHistogram.from_lengths([20])})
    stage = {"name": "s", "L": 64, "tokens": 1000, "weights": "x=70%,y=30%"} | change
    got = schedule_frequency(parse_schedule({"stages": [stage]}, source="s.yaml", histogram=h))
    replay = change.get("position_ids", change.get("curriculum", {})).get("replay", False)
    rows = change.get("curriculum", {}).get("kind") in ("warmup", "skyladder")  # their rows of L are bounded
    bound = REPLAYED if replay else WALKED
    mix = weighted_histogram(h, "x=70%,y=30%", stream=bound, window=64 if rows else None)[0]
    assert bound // 2 < mix.documents <= bound
    spec = change.get("curriculum") or change["position_ids"]
    method = (curriculum_from_spec if "curriculum" in change else position_ids_from_spec)(spec)
    steps = {"stage_tokens": stage["tokens"]} if "curriculum" in change else {}  # the stage's steps
    f = method.frequency(mix.lengths, mix.counts, stage["L"], change.get("regime", "natural"), **steps)
    assert got.frequencies[0].tolist() == f.numerator.tolist()


def test_a_replay_past_the_stream_bound_names_itself_not_the_pack_regime():
    from freqlab.frequency.pose import position_ids_from_spec

    with pytest.raises(FreqlabError, match=r"^PoSE's replay expands the histogram into a stream of 4,294,967,296"):
        position_ids_from_spec({"kind": "pose", "target": 128, "replay": True}).frequency([100], [1 << 32], 64)


def test_a_histogram_or_weights_given_where_every_stage_names_its_own_is_refused(tmp_path):
    """A review: schedule --hist nowhere.parquet, and --weights, ran without a word where every stage names its own
    (they are the default of the stages that name none), as a layout given for such a schedule is refused."""
    LengthHistogram.from_counts([8], [3]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text("stages:\n  - {L: 8, tokens: 1K, histogram: h.parquet, weights: a=1}\n")
    for option, message in (
        ({"histogram": "nowhere.parquet"}, r"every stage names its histogram, so --hist \(the histogram of the stages"),
        ({"weights": "a=5"}, r"every stage names its weights, so --weights \(the weights of the stages that name none"),
    ):
        with pytest.raises(FreqlabError, match=message):
            load_schedule(tmp_path / "s.yaml", **option)
    (tmp_path / "t.yaml").write_text("stages:\n  - {L: 8, tokens: 1K, histogram: h.parquet}\n  - {L: 8, tokens: 1K}\n")
    other = tmp_path / "other.parquet"
    assert [s.histogram for s in load_schedule(tmp_path / "t.yaml", histogram=other).stages] == [
        tmp_path / "h.parquet", other,
    ]  # fmt: skip


def test_the_report_after_each_stage_equals_the_effective_length_of_its_first_stages(tmp_path):
    """The report sums F stage by stage (it summed the first k stages again for each k: a review's 5,000 stages ran
    for minutes); each row is still effective_length(stages=k + 1) of each kind."""
    LengthHistogram.from_counts([8, 30], [30, 5]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nstages:\n  - {L: 8, tokens: 2K, layout: swa4+global}\n"
        "  - {L: 16, tokens: 3K, layout: swa8+global}\n  - {L: 32, tokens: 500, layout: swa8+global}\n"
    )
    result = schedule_frequency(load_schedule(tmp_path / "s.yaml"))
    for tau in (10, 100, 1000):
        rows = result.to_dict(tau)["stages"]
        for k, row in enumerate(rows):
            expected = {kind.name: result.effective_length(tau, kind, stages=k + 1) for kind in result.kind_names}
            assert row["effective_length_after"] == expected
        assert len({str(row["effective_length_after"]) for row in rows}) > 1  # the stages change it


def test_a_stages_missing_histogram_or_empty_layout_names_the_schedule_and_the_stage(tmp_path):
    """A review: "nope/lengths.parquet: no such histogram file" and "an empty path names no file or folder" named
    neither the schedule nor the stage."""
    (tmp_path / "m.yaml").write_text("stages:\n  - {name: a, L: 16, tokens: 1K, histogram: nope.parquet}\n")
    with pytest.raises(FreqlabError, match=r"m\.yaml: stage 1 \(a\): .*nope\.parquet: no such histogram file"):
        schedule_frequency(load_schedule(tmp_path / "m.yaml"))
    # a later review: the empty layout was read as a path ("an empty path names no file or folder"), where
    # freq --layout '' says what a layout is
    empty = r"e\.yaml: stage 1 \(a\): an empty layout \(give e\.g\. 5\*swa1024\+global or a config\.json\)$"
    for blank in ("''", "' '"):
        (tmp_path / "e.yaml").write_text(
            f"histogram: h.parquet\nstages:\n  - {{name: a, L: 16, tokens: 1K, layout: {blank}}}\n"
        )
        with pytest.raises(FreqlabError, match=empty):
            load_schedule(tmp_path / "e.yaml")


def test_a_window_as_long_as_the_longest_stage_caps_no_reach(tmp_path):
    """A review: swa100 at L = 8 read "reach capped at 7 by construction", as a window of 8 would; it caps nothing."""
    from freqlab.frequency.layouts import LayerKind

    result = two_stages(tmp_path, "{name: a, L: 8, tokens: 1K, layout: swa100+swa4}", "{name: b, L: 8, tokens: 1K}")
    assert result.reach_cap(LayerKind("swa", 100), stages=1) is None and result.reach_cap(LayerKind("swa", 4), 1) == 3
    assert (
        "capped"
        not in two_stages(
            tmp_path, "{name: a, L: 8, tokens: 1K}", "{name: b, L: 8, tokens: 1K, layout: swa100+global}"
        ).report()
    )


def test_a_curriculum_walking_rows_of_long_documents_takes_a_fractional_mix_bounded_by_its_rows(small_mix_bounds):
    """A review: the mix kept 2^25 documents, but a curriculum walks rows: 100 and 50 documents of 20,000 and
    30,000 tokens at L = 64 still walked 8.6·10^9 rows and were refused. The mix bounds the rows it gives."""
    from freqlab.frequency.curricula import curriculum_from_spec
    from freqlab.frequency.mixture import weighted_histogram
    from freqlab.histogram import combine_sources

    h = combine_sources(
        {"a": LengthHistogram.from_counts([20_000], [100]), "b": LengthHistogram.from_counts([30_000], [50])}
    )
    spec = {"kind": "warmup", "start": 8, "share": 0.5}
    stage = {"name": "s", "L": 64, "tokens": "1B", "weights": "a=70%,b=30%", "regime": "pack", "curriculum": spec}
    got = schedule_frequency(parse_schedule({"stages": [stage]}, source="s.yaml", histogram=h))
    mix = weighted_histogram(h, "a=70%,b=30%", stream=WALKED, window=64)[0]
    rows = int(np.sum(-(-mix.lengths // 64) * mix.counts))
    # the rows bound it here (a power-of-two scale of the counts, rounded: just under half the bound at worst)
    assert ROWS // 4 < rows <= ROWS and mix.documents < WALKED // 64
    assert (
        got.frequencies[0].tolist()
        == curriculum_from_spec(spec)
        .frequency(mix.lengths, mix.counts, 64, "pack", stage_tokens=10**9)
        .numerator.tolist()
    )


def test_effective_length_refuses_a_threshold_that_is_no_positive_number():
    """A review: tau = -5, 0 and True gave L - 1, nan and inf Python's ValueError and OverflowError."""
    result = schedule_frequency(
        parse_schedule({"stages": [{"L": 8, "tokens": 100}]}, histogram=LengthHistogram.from_counts([3, 6], [2, 1]))
    )
    for tau in (-5, 0, True, float("nan"), float("inf"), "100B"):
        with pytest.raises(FreqlabError, match=r"^tau must be a positive"):
            result.effective_length(tau)
    assert result.effective_length(1) == 5 and result.effective_length(Fraction(1, 2)) == 5


def test_the_report_names_its_histogram_file_and_each_stages_curriculum_or_position_ids(tmp_path):
    """A review: only --json said which stage runs a curriculum or PoSE, and a histogram file went unnamed."""
    LengthHistogram.from_counts([40], [30]).to_parquet(tmp_path / "h.parquet")
    (tmp_path / "s.yaml").write_text(
        "histogram: h.parquet\nstages:\n"
        "  - {name: warm, L: 16, tokens: 1T, regime: concat, curriculum: {kind: warmup, start: 4, share: 0.5}}\n"
        "  - {name: pose, L: 16, tokens: 1T, position_ids: {kind: pose, target: 64}}\n"
        "  - {name: plain, L: 16, tokens: 1T}\n"
    )
    lines = schedule_frequency(load_schedule(tmp_path / "s.yaml")).report().splitlines()
    assert f"histogram: {tmp_path / 'h.parquet'}" in lines
    line = {name: next(x for x in lines if x.startswith(f"  {name} ")) for name in ("warm", "pose", "plain")}
    assert "(curriculum: warmup)" in line["warm"] and "(position ids: pose; one row per document" in line["pose"]
    assert "curriculum" not in line["plain"] and "position ids" not in line["plain"]


def test_a_stage_named_by_a_decimal_number_is_refused_not_rewritten(tmp_path):
    """A second review: `name: 1.10` became "1.1" (YAML reads a float), and stages 1.1 and 1.10 clashed."""
    path = tmp_path / "s.yaml"
    path.write_text("stages:\n  - {name: 1.10, L: 2048, tokens: 1B}\n")
    with pytest.raises(FreqlabError, match=r"stage 1: name is the number 1.1 as read: quote it to keep the text"):
        load_schedule(path, histogram=LengthHistogram.from_lengths([100, 3000]))


def test_a_stages_line_says_its_shares_were_normalised_as_freq_does(tmp_path):
    """A review: a mix file of shares summing to 0.6 was normalised to 50%/50% in silence in a schedule, where
    ``freq --weights`` says so."""
    from freqlab.histogram import combine_sources

    parts = {"web": LengthHistogram.from_counts([100], [50]), "code": LengthHistogram.from_counts([200], [40])}
    combine_sources(parts).to_parquet(tmp_path / "src.parquet")
    (tmp_path / "mix.yaml").write_text("unit: share\nweights: {web: 0.3, code: 0.3}\n")
    (tmp_path / "s.yaml").write_text(
        "histogram: src.parquet\nstages:\n  - {name: s, L: 256, tokens: 1T, weights: mix.yaml}\n"
    )
    result = schedule_frequency(load_schedule(tmp_path / "s.yaml"))
    line = next(line for line in result.report().splitlines() if line.startswith("  s "))
    assert "(weights share web=0.3, code=0.3 (relative, sum 0.6: normalised to web=50%, code=50%)" in line
