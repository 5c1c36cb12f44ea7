"""The best-fit and megatron regimes, against token-by-token references and megatron-core's own samples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freqlab.errors import FreqlabError
from freqlab.frequency import position_frequency
from freqlab.frequency.megatron_replay import (
    MegatronDataset,
    MegatronOptions,
    blend_counts,
    megatron_segments,
    train_range,
)
from freqlab.frequency.position import segment_frequency
from freqlab.frequency.regime_table import describe, regime_rows

from .reference import best_fit_rows, frequency_of_segments, megatron_windows

DATA = Path(__file__).parents[1] / "data" / "megatron"
REFERENCE = json.loads((DATA / "reference.json").read_text())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 90), max_size=40), st.integers(1, 32))
def test_best_fit_matches_the_token_level_packing(docs, L):
    if not docs:
        return
    lengths, counts = np.unique(docs, return_counts=True)
    expected = frequency_of_segments(best_fit_rows(docs, L), L)
    assert position_frequency(lengths, counts, L, "best-fit").tolist() == expected


def test_best_fit_fills_rows_that_concatenation_would_cut():
    # chunks 6, 5, 4, 3, 2 in rows of 10: best fit packs [6 4] [5 3 2]: two full rows, no document cut
    f = position_frequency([2, 3, 4, 5, 6], [1, 1, 1, 1, 1], 10, "best-fit")
    assert f.tolist() == [20 - 2 * i for i in range(10)]


@pytest.mark.parametrize("config", REFERENCE["configs"], ids=lambda c: f"{c['data_path']}-L{c['L']}")
def test_megatron_regime_equals_megatron_core_token_by_token(config):
    """f(i) counted from the attention masks of the samples megatron-core's GPTDataset/BlendedDataset hand
    the trainer (tests/data/megatron/make_reference.py), against the replay from the .idx and the seed."""
    words = config["data_path"].split()
    if len(words) == 1:
        data_path = str(DATA / words[0])
    else:
        data_path = " ".join(w if k % 2 == 0 else str(DATA / w) for k, w in enumerate(words))
    options = MegatronOptions(
        data_path, config["seed"], config["split"], config["reset_attention_mask"], config.get("train_samples")
    )
    segs = megatron_segments(config["L"], options)
    assert segs.approximation is None
    assert segment_frequency(segs).tolist() == config["f"]


def test_megatron_walk_against_the_token_stream():
    """The replay of one prefix, against windows cut from the explicit token stream of the shuffled sequences."""
    from freqlab.corpus.megatron import read_index

    index = read_index(str(DATA / "multi.idx"))
    tokens = np.fromfile(index.bin_path, index.dtype)  # the .bin, read whole
    L, seed, samples = 16, 99, 40
    begin, end = train_range("90,10", index.sequences)
    dataset = MegatronDataset.build(np.asarray(index.sequence_lengths), begin, end, L, samples, seed)
    starts = np.asarray(index.sequence_pointers) // tokens.itemsize
    stream = [int(t) for s in dataset.sequence_order for t in tokens[starts[s] : starts[s] + index.sequence_lengths[s]]]
    windows = sorted(int(w) for w in dataset.shuffle[:samples])
    expected = frequency_of_segments(megatron_windows(stream, REFERENCE["eod"], L, windows, True), L)
    options = MegatronOptions(str(DATA / "multi"), seed, "90,10", True, samples)
    assert segment_frequency(megatron_segments(L, options)).tolist() == expected


def eod_documents(seed: int, count: int = 60, ends: int = 2, inside: int = 2) -> list[list[list[int]]]:
    """Megatron documents ending with ``ends`` (``--append-eod``), with up to two ``inside`` tokens in their text and
    some split into two sequences (``--split-sentences``)."""
    rng = np.random.default_rng(seed)
    documents = []
    for _ in range(count):
        tokens = [*rng.integers(3, 50, int(rng.integers(0, 25))).tolist(), ends]
        for at in rng.integers(0, len(tokens), int(rng.integers(0, 3))):  # EOD ids inside the text
            tokens[at] = inside
        cut = int(rng.integers(1, len(tokens))) if len(tokens) > 2 and rng.random() < 0.4 else len(tokens)
        documents.append([tokens[:cut], tokens[cut:]] if cut < len(tokens) else [tokens])
    return documents


def reference_f(prefix, eod: int, L: int, samples: int | None, split: str = "969,30,1", seed: int = 1234) -> list:
    """f counted token by token from Megatron's windows of the explicit stream, cut after each ``eod`` token."""
    from freqlab.corpus.megatron import read_index

    index = read_index(f"{prefix}.idx")
    tokens = np.fromfile(index.bin_path, index.dtype)  # the .bin, read whole
    begin, end = train_range(split, index.sequences)
    dataset = MegatronDataset.build(np.asarray(index.sequence_lengths), begin, end, L, samples, seed)
    starts = np.asarray(index.sequence_pointers) // tokens.itemsize
    stream = [int(t) for s in dataset.sequence_order for t in tokens[starts[s] : starts[s] + index.sequence_lengths[s]]]
    taken = dataset.windows if samples is None else samples
    windows = sorted(int(w) for w in dataset.shuffle[:taken])
    return frequency_of_segments(megatron_windows(stream, eod, L, windows, True), L)


@pytest.mark.parametrize(("seed", "L", "samples"), [(0, 16, 30), (1, 7, 60), (2, 33, None), (3, 5, 200)])
def test_an_eod_inside_a_document_is_cut_at_as_megatron_s_mask_does(tmp_path, seed, L, samples):
    """A review: Megatron's reset mask cuts after every token equal to the EOD id (a text holding <|endoftext|>,
    tokenized as the special token), where the replay cut only at document ends (12,863 segments against 3,225)."""
    from ..corpus.tokenized_writers import write_megatron

    write_megatron(tmp_path / "c", eod_documents(seed))
    expected = reference_f(tmp_path / "c", 2, L, samples)
    options = MegatronOptions(str(tmp_path / "c"), 1234, "969,30,1", True, samples)
    assert segment_frequency(megatron_segments(L, options)).tolist() == expected
    assert segment_frequency(megatron_segments(L, options, eod=2)).tolist() == expected  # the id given
    no_reset = segment_frequency(megatron_segments(L, options, eod=False)).tolist()
    assert no_reset == [sum(expected[:1]) // L * (L - i) for i in range(L)]


def test_the_scan_s_eos_id_is_the_eod_the_replay_cuts_at(tmp_path):
    """A second review: the replay inferred its own EOD id: with --eos-id 2 and one document of 50 not ending with it,
    "mixed" dropped the reset mask (48 segments for 158); without any appended, --eos-id 999 was ignored and a token
    common at the documents' ends and inside them was cut at (198 segments for 47). freq's replay of the histogram
    takes the scan's id too."""
    import json

    from click.testing import CliRunner

    from freqlab.cli import main

    from ..corpus.tokenized_writers import write_megatron

    documents = eod_documents(5, count=50)
    documents[7] = [[9, 9, 9]]  # one document without its EOD: the endings are mixed
    write_megatron(tmp_path / "b", documents, np.uint16)
    write_megatron(tmp_path / "c", eod_documents(6, count=50, ends=13, inside=13), np.uint16)  # no EOD appended
    regime = ("--L", 16, "--regime", "megatron", "--reset-attention-mask", "--json")
    for prefix, eos, cut_at in (("b", 2, 2), ("c", 999, None)):
        out = tmp_path / f"out_{prefix}"
        args = ("scan", "--dataset", tmp_path / f"{prefix}.idx", "--eos-id", eos, *regime, "--out", out)
        scanned = json.loads(CliRunner().invoke(main, [str(a) for a in args]).output)
        f = scanned["windows"][0]["f"]
        expected = reference_f(tmp_path / prefix, cut_at if cut_at is not None else -1, 16, None)
        assert [f[str(i)] for i in (0, 4, 8, 12, 15)] == [expected[i] for i in (0, 4, 8, 12, 15)], prefix
        replayed = CliRunner().invoke(main, ["freq", str(out / "lengths.parquet"), *[str(a) for a in regime]])
        assert json.loads(replayed.output)["results"][0]["f"] == f
        named = ("--data-path", str(tmp_path / prefix))  # the scanned index named: its id too (a third review)
        replayed = CliRunner().invoke(main, ["freq", str(out / "lengths.parquet"), *named, *[str(a) for a in regime]])
        assert json.loads(replayed.output)["results"][0]["f"] == f


def test_megatron_without_reset_is_whole_windows():
    options = MegatronOptions(str(DATA / "single"), reset_attention_mask=False, epochs=2)
    tokens = int(np.sum(np.fromfile(DATA / "single.idx", np.int32, offset=34, count=120)[:116]))  # 969,30,1: 116
    windows = (2 * tokens - 1) // 16
    assert segment_frequency(megatron_segments(16, options)).tolist() == [windows * (16 - i) for i in range(16)]


def test_a_replay_that_draws_no_sample_says_so():
    """A review: an epoch shorter than a sample (T - 1 < L) was "no tokens in the segments: the histogram holds no
    documents", of a histogram of 120 documents."""
    tokens = int(np.sum(np.fromfile(DATA / "single.idx", np.int32, offset=34, count=120)[:116]))
    options = MegatronOptions(str(DATA / "single"), reset_attention_mask=False)
    message = rf"holds {tokens:,} tokens: one epoch of it makes no sample of L \+ 1 = {tokens + 1:,} tokens .*2 epochs"
    with pytest.raises(FreqlabError, match=message):
        megatron_segments(tokens, options)
    epochs = MegatronOptions(str(DATA / "single"), reset_attention_mask=False, epochs=2)  # said as given
    with pytest.raises(FreqlabError, match=rf"holds {tokens:,} tokens: 2 epochs of it make no sample .*3 epochs"):
        megatron_segments(2 * tokens + 1, epochs)
    assert megatron_segments(tokens - 1, options).counts.sum() == 1  # (T - 1) // (T - 1): one window


def test_megatron_from_a_histogram_says_what_was_computed_instead():
    lengths, counts = [5, 9, 30], [3, 2, 1]
    rows = regime_rows(lengths, counts, [8], ["megatron"], megatron=MegatronOptions(reset_attention_mask=True))
    assert rows[0]["approximation"] == "pack"
    assert "pack computed: a length histogram has no order" in describe(rows[0])
    plain = megatron_segments(8, None, histogram=(np.array(lengths), np.array(counts)))
    assert plain.approximation == "concat"
    assert segment_frequency(plain).tolist() == position_frequency(lengths, counts, 8, "concat").tolist()


def test_blend_counts_follow_megatron_cores_greedy():
    assert blend_counts([0.3, 0.7], 10) == [3, 7]
    assert sum(blend_counts([0.2, 0.5, 0.3], 1000)) == 1000


def test_megatron_options_are_checked_before_reading():
    with pytest.raises(FreqlabError, match="not both"):
        MegatronOptions("x", train_samples=3, epochs=1)
    with pytest.raises(FreqlabError, match="'W1 PREFIX1"):
        MegatronOptions("0.5 a b")
    with pytest.raises(FreqlabError, match="needs train_samples"):
        megatron_segments(8, MegatronOptions(f"1 {DATA / 'single'} 1 {DATA / 'multi'}"))
    with pytest.raises(FreqlabError, match="no such Megatron index"):
        megatron_segments(8, MegatronOptions(str(DATA / "missing")))
    # megatron-core takes prefixes without weights (each weighted by its samples): not "as in Megatron" (a review)
    unweighted = MegatronOptions(f"{DATA / 'single'} {DATA / 'multi'}", train_samples=4)
    with pytest.raises(FreqlabError, match=r"^several prefixes without weights \(megatron-core then weights each by"):
        megatron_segments(8, unweighted)


def test_data_path_weights_are_what_megatrons_float_reads():
    """Megatron reads a weight with float(): '1.', '1_0', '-1', 'nan' are weights (a review: '-1 x' looked for
    -1.idx, '1. x' for '1..idx'); a weight that is no positive finite number is refused, naming it."""
    from freqlab.frequency.megatron_replay import MegatronOptions

    assert MegatronOptions("1. a 1_0 b").blend() == [(1.0, "a"), (10.0, "b")]
    assert MegatronOptions("a b").blend() == [(None, "a"), (None, "b")]
    for weight in ("-1", "nan", "inf", "0"):
        with pytest.raises(FreqlabError, match=f"weights must be positive finite numbers, got '{weight}'"):
            MegatronOptions(f"{weight} a")


def test_the_eod_tokens_kept_are_sized_before_they_are_read(tmp_path, monkeypatch):
    """A second review: eod_cuts kept ~48 bytes per EOD token unchecked (a common token taken for the EOD: 24 GB for a
    20 GB .bin); they are counted first and kept as 4 bytes each, within the memory available."""
    from freqlab.frequency.megatron_replay import eod_cuts

    from ..corpus.tokenized_writers import write_megatron

    write_megatron(tmp_path / "m", [[[2] * 1000] for _ in range(300)], np.uint16)  # 300,000 EOD tokens
    from freqlab.corpus.megatron import read_index

    starts, offsets = eod_cuts(read_index(str(tmp_path / "m.idx")), 2)
    assert offsets.dtype == np.int32 and offsets.size == 300_000 and starts[-1] == 300_000
    assert offsets[:3].tolist() == [0, 1, 2] and starts[:3].tolist() == [0, 1000, 2000]
    monkeypatch.setenv("FREQLAB_MEMORY_BYTES", str(1_000_000))
    with pytest.raises(FreqlabError, match=r"the EOD id 2 needs ~1\.2 MB of memory \(300,000 tokens of .*m\.bin"):
        eod_cuts(read_index(str(tmp_path / "m.idx")), 2)


def test_a_bin_cut_during_the_replay_is_one_line_not_a_crash(tmp_path, monkeypatch):
    """The replay's EOD scan reads the .bin in chunks (a review: it memory-mapped it, and a .bin cut during a
    --reset-attention-mask replay would kill the process): the cut is a short read naming the file."""
    import os

    import freqlab.corpus.token_files as token_files
    import freqlab.frequency.megatron_replay as replay

    from ..corpus.tokenized_writers import write_megatron

    write_megatron(tmp_path / "m", [[[5, 6, 2]] for _ in range(40)], np.uint16)  # 120 tokens, an EOD every 3
    options = MegatronOptions(str(tmp_path / "m"), 1234, "1,0,0", True, 30)
    whole = megatron_segments(8, options)
    monkeypatch.setattr(token_files, "CHUNK_TOKENS", 8)  # 15 chunks: the same cuts
    chunked = megatron_segments(8, options)
    assert (chunked.lengths.tolist(), chunked.counts.tolist()) == (whole.lengths.tolist(), whole.counts.tolist())
    assert int(np.dot(whole.lengths, whole.counts)) == 30 * 8  # 30 samples of 8 tokens, cut after each EOD
    read = replay.eod_cuts

    def cut_then_read(index, eod_id):
        os.truncate(index.bin_path, 2 * 100)
        return read(index, eod_id)

    monkeypatch.setattr(replay, "eod_cuts", cut_then_read)
    with pytest.raises(
        FreqlabError, match=r"m\.bin changed while it was being read \(8 of 16 bytes read at byte 192: cut short\)"
    ):
        megatron_segments(8, options)


def test_a_bin_rewritten_between_the_two_eod_passes_is_refused_more_or_fewer():
    """A review: a .bin rewritten between the pass that counts the EOD tokens and the one that keeps them gave a
    histogram of two versions when the second found fewer."""
    from types import SimpleNamespace

    from freqlab.corpus.file_discovery import FileChanged
    from freqlab.frequency.megatron_replay import eod_cuts

    for first, second, said in (([5, 2, 7, 2], [5, 2, 7, 7], "fewer"), ([5, 2, 7, 7], [5, 2, 2, 7], "more")):
        passes = iter([[(0, np.array(first))], [(0, np.array(second))]])
        index = SimpleNamespace(
            token_chunks=lambda passes=passes: iter(next(passes)),
            sequence_pointers=np.array([0]),
            sequence_lengths=np.array([4]),
            dtype=np.dtype(np.int32),
            bin_path="x.bin",
        )
        with pytest.raises(FileChanged, match=f"^{said} tokens equal to 2 than the first pass counted$") as error:
            eod_cuts(index, 2)
        assert error.value.path == "x.bin"


def test_a_sequence_pointer_corrupt_past_the_checked_ones_is_refused_by_the_eod_scan(tmp_path):
    """A review: sequence 1050 of 1100 pointed past the .bin; the index opens (its first 1,024 pointers and the
    .bin's size are checked), and the replay moved one EOD cut without a word (1,329 segments for 1,330)."""
    import struct

    from freqlab.corpus.megatron import HEADER, read_index
    from freqlab.frequency.megatron_replay import eod_cuts

    from ..corpus.tokenized_writers import write_megatron

    write_megatron(tmp_path / "m", [[[5, 2, 7]]] * 1100, np.uint16)
    raw = bytearray((tmp_path / "m.idx").read_bytes())
    at = HEADER.size + 4 * 1100 + 8 * 1050
    raw[at : at + 8] = struct.pack("<q", 10**6)
    (tmp_path / "m.idx").write_bytes(bytes(raw))
    with pytest.raises(
        FreqlabError, match=r"m\.bin: sequence 1,050 starts at byte 1,000,000, not where sequence 1,049 ends"
    ):
        eod_cuts(read_index(str(tmp_path / "m.idx")), 2)
    raw[at : at + 8] = struct.pack("<q", 1050 * 6 + 1)  # one byte off: part of a token (an adversary)
    (tmp_path / "m.idx").write_bytes(bytes(raw))
    with pytest.raises(FreqlabError, match=r"sequence 1,050 starts at byte 6,301, not where sequence 1,049 ends"):
        eod_cuts(read_index(str(tmp_path / "m.idx")), 2)


def test_a_scanned_index_whose_path_holds_a_space_is_replayed(tmp_path):
    """A review: the scanned .idx became the data_path, whose words Megatron splits: "sp2 x/m.idx" read as two
    prefixes ("needs train_samples"). The scanned index is kept whole (``index``); a data_path is split as before."""
    from click.testing import CliRunner

    from freqlab.cli import main

    from ..corpus.tokenized_writers import write_megatron

    folder = tmp_path / "sp2 x"
    folder.mkdir()
    documents = [[[5, 6, 7, 2]] for _ in range(30)]  # 120 tokens, an EOD every 4
    write_megatron(folder / "m", documents, np.uint16)
    write_megatron(tmp_path / "plain", documents, np.uint16)  # the same index at a path without a space
    expected = megatron_segments(8, MegatronOptions(str(tmp_path / "plain"), reset_attention_mask=True))
    got = megatron_segments(8, MegatronOptions(index=str(folder / "m.idx"), reset_attention_mask=True))
    assert (got.lengths.tolist(), got.counts.tolist()) == (expected.lengths.tolist(), expected.counts.tolist())
    assert expected.approximation is None and expected.lengths.tolist() == [4]  # windows of 8 cut after each EOD
    scanned = CliRunner().invoke(
        main,
        ["scan", "--dataset", str(folder / "m.idx"), "--L", "8", "--regime", "megatron", "--reset-attention-mask",
         "--out", str(tmp_path / "out"), "--json", "-q"],
    )  # fmt: skip
    assert scanned.exit_code == 0, scanned.output
    (row,) = json.loads(scanned.stdout)["windows"]
    replayed = CliRunner().invoke(
        main, ["freq", str(tmp_path / "out" / "lengths.parquet"), "--L", "8", "--regime", "megatron",
               "--reset-attention-mask"],
    )  # fmt: skip
    assert replayed.exit_code == 0, replayed.output
    assert f"GPTDataset's windows replayed from {folder / 'm.idx'}" in replayed.output
    assert (row["regime"], row["segments"]) == ("megatron", int(expected.counts.sum())) and "approximation" not in row


def test_a_reset_mask_that_cuts_nothing_is_said(tmp_path):
    """A review: with no EOD appended and no --eos-id, --reset-attention-mask counted whole windows without a word."""
    from freqlab.frequency.regime_table import describe, regime_rows

    from ..corpus.tokenized_writers import write_megatron

    rng = np.random.default_rng(3)
    write_megatron(tmp_path / "n", [[rng.integers(3, 50, 12).tolist()] for _ in range(40)])  # no common last token
    options = MegatronOptions(str(tmp_path / "n"), reset_attention_mask=True)
    segs = megatron_segments(16, options)
    assert segs.note.startswith(f"--reset-attention-mask cuts nothing in {tmp_path / 'n'}: its documents end with")
    assert segs.lengths.tolist() == [16]  # whole windows
    row = regime_rows([12], [40], [16], ["megatron"], megatron=options)[0]
    assert "Megatron's EOD id is not known here (whole windows counted)" in describe(row)
    assert megatron_segments(16, MegatronOptions(str(tmp_path / "n"), reset_attention_mask=True, eod_id=7)).note is None
