"""Tokenized training data as scan input: lengths read without a tokenizer, from files the real libraries (or
their documented layouts) wrote: Megatron indexes, datatrove .ds, HF token columns, numpy token streams."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.corpus import ReadOptions, open_corpus
from freqlab.errors import FreqlabError
from freqlab.scan import scan

from .tokenized_writers import single_sequence_documents, write_megatron

MEGATRON_DATA = Path(__file__).parents[1] / "data" / "megatron"


def lengths_of(spec, **kwargs) -> list[int]:
    """Every document length of a corpus of tokenized data, in order (empty documents as 0)."""
    corpus = open_corpus(str(spec), **kwargs)
    assert corpus.kind == "lengths"
    return [int(n) for shard in corpus.shards for batch in shard.read_lengths() for n in batch.lengths]


def scan_lengths(spec, **kwargs):
    result = scan(str(spec), workers=1, progress=False, **kwargs)
    return result, dict(zip(result.histogram.lengths.tolist(), result.histogram.counts.tolist(), strict=True))


# ---- Megatron -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["single", "multi"])
def test_megatron_core_written_index_gives_the_distances_between_eods(prefix):
    """Files written by megatron-core's IndexedDatasetBuilder (every document ends with EOD 2, no other 2):
    the lengths from the .idx equal the distances between EODs in the .bin, read without the index."""
    dtype = np.int32 if prefix == "single" else np.uint16
    tokens = np.fromfile(MEGATRON_DATA / f"{prefix}.bin", dtype)
    eods = np.flatnonzero(tokens == 2)
    assert lengths_of(MEGATRON_DATA / f"{prefix}.idx") == np.diff(eods, prepend=-1).tolist()
    corpus = open_corpus(str(MEGATRON_DATA / f"{prefix}.idx"))
    assert corpus.description["eos"]["appended"] is True and corpus.description["eos"]["eos_id"] == 2


def test_megatron_documents_of_several_sequences_and_empty_ones(tmp_path):
    docs = [[[5, 6, 2]], [], [[7, 7], [7, 7, 7], [2]], [[9, 2]]]
    write_megatron(tmp_path / "c_text_document", docs, np.uint16)
    assert lengths_of(tmp_path / "c_text_document.idx") == [3, 0, 6, 2]
    result, counts = scan_lengths(tmp_path / "c_text_document.idx")
    assert counts == {2: 1, 3: 1, 6: 1} and result.histogram.empty_documents == 1
    assert result.summary["tokenizer"] is None
    assert "lengths read from tokenized data; EOS 2 appended" in result.report()


def test_a_megatron_bin_named_instead_of_its_index_says_to_give_the_index(tmp_path):
    # it was "unknown file format; supported: ... Megatron .idx/.bin, ...", .bin in the list it was refused by
    write_megatron(tmp_path / "p", [[[5, 6, 2]]])
    with pytest.raises(FreqlabError) as error:
        open_corpus(str(tmp_path / "p.bin"))
    assert str(error.value) == f"{tmp_path}/p.bin: the tokens of a Megatron dataset; give its index, {tmp_path}/p.idx"


def test_a_megatron_index_pairs_with_the_bin_of_its_own_prefix_in_any_case(tmp_path):
    """A review: x.IDX was counted from another index, x.idx (its lengths opened by a lower-case name), and x.BIN
    beside x.IDX was claimed as a token stream. The .bin pairs in the index's own case first, then lower case."""
    write_megatron(tmp_path / "x", [[[5, 6, 2]], [[7, 2]]])
    os.rename(tmp_path / "x.idx", tmp_path / "x.IDX")
    write_megatron(tmp_path / "other" / "x", [[[5, 2]], [[6, 2]], [[7, 7, 7, 2]]])
    os.rename(tmp_path / "other" / "x.idx", tmp_path / "x.idx")  # another index beside it, of another .bin
    os.rename(tmp_path / "other" / "x.bin", tmp_path / "other.bin")
    assert lengths_of(tmp_path / "x.IDX") == [3, 2]  # not x.idx's
    os.remove(tmp_path / "x.idx")
    os.rename(tmp_path / "x.bin", tmp_path / "x.BIN")
    assert lengths_of(tmp_path / "x.IDX") == [3, 2]
    with pytest.raises(FreqlabError, match=r"x\.BIN: the tokens of a Megatron dataset; give its index, .*x\.IDX$"):
        open_corpus(str(tmp_path / "x.BIN"))


def test_a_corrupt_document_index_is_named_so_not_a_changed_file(tmp_path, monkeypatch):
    """A review: a document_indices entry far past the sequences read as "the index ends at byte ..., before
    byte ...; did it change during the scan?"."""
    import freqlab.corpus.token_files as token_files

    monkeypatch.setattr(token_files, "BATCH_DOCUMENTS", 2)
    monkeypatch.setattr(token_files, "EOS_CHECKED", 1)  # the entry past the documents whose EOS is checked
    idx = write_megatron(tmp_path / "c", single_sequence_documents([3, 4, 5, 6]))
    data = bytearray(idx.read_bytes())
    entries = 34 + 12 * 4  # document_indices: 0, 1, 2, 3, 4
    data[entries + 8 * 2 : entries + 8 * 3] = np.int64(10**12).tobytes()
    idx.write_bytes(bytes(data))
    with pytest.raises(
        FreqlabError,
        match=r"c\.idx: cannot read \(ValueError: documents 0\.\.1: document_indices run from 0 to 1,000,000,000,000, "
        r"outside the 4 sequences \(corrupt index\)\)",
    ):
        lengths_of(idx)


def test_megatron_without_eod_says_none_was_appended(tmp_path):
    write_megatron(tmp_path / "p", [[[5, 6, 7]], [[8, 9]], [[4]]])
    assert open_corpus(str(tmp_path / "p.idx")).description["eos"]["appended"] is False
    corpus = open_corpus(str(tmp_path / "p.idx"), read=ReadOptions(eos_id=2))
    assert corpus.description["eos"] == {
        "documents_checked": 3,
        "eos_id": 2,
        "ending_with_eos": 0,
        "appended": False,
        "from": "eos_id option",
    }


def test_megatron_large_index_is_cut_into_document_ranges(tmp_path, monkeypatch):
    import freqlab.corpus.local_files as local_files
    import freqlab.corpus.token_files as token_files

    monkeypatch.setattr(local_files, "range_bytes", lambda total: 100)
    monkeypatch.setattr(token_files, "MIN_SHARD_DOCUMENTS", 7)
    monkeypatch.setattr(token_files, "BATCH_DOCUMENTS", 3)
    lengths = [1 + (k * 37) % 50 for k in range(40)]
    write_megatron(tmp_path / "big", single_sequence_documents(lengths))
    corpus = open_corpus(str(tmp_path / "big.idx"))
    assert len(corpus.shards) > 1
    assert lengths_of(tmp_path / "big.idx") == lengths


def random_documents(count: int, seed: int) -> list[list[list[int]]]:
    """Documents of 0-4 sequences each, sequences of 0-9 tokens (empty ones too, as a writer may leave)."""
    rng = np.random.default_rng(seed)
    return [[[7] * int(rng.integers(0, 10)) for _ in range(int(rng.integers(0, 5)))] for _ in range(count)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_megatron_lengths_across_batches_and_shards_are_the_sums_of_each_documents_sequences(
    tmp_path, monkeypatch, seed
):
    """The compiled pass over reused buffers against the obvious answer: each document's tokens, counted from
    the list the file was written from, with batches (3 documents) and shards (7) cutting documents anywhere."""
    import freqlab.corpus.local_files as local_files
    import freqlab.corpus.token_files as token_files

    monkeypatch.setattr(local_files, "range_bytes", lambda total: 100)
    monkeypatch.setattr(token_files, "MIN_SHARD_DOCUMENTS", 7)
    monkeypatch.setattr(token_files, "BATCH_DOCUMENTS", 3)
    docs = random_documents(60, seed)
    write_megatron(tmp_path / "mixed", docs)
    expected = [sum(len(sequence) for sequence in doc) for doc in docs]
    assert lengths_of(tmp_path / "mixed.idx") == expected
    # a document limit keeps each batch's lengths in the shard's log: the reader's reused buffer must not leak in
    result = scan(str(tmp_path / "mixed.idx"), workers=1, progress=False, max_docs=50)
    kept = [n for n in expected[:50] if n]
    assert result.histogram.documents == len(kept) and result.histogram.empty_documents == 50 - len(kept)
    assert dict(zip(result.histogram.lengths.tolist(), result.histogram.counts.tolist(), strict=True)) == {
        n: kept.count(n) for n in set(kept)
    }


@pytest.mark.parametrize("found", ["when opened", "while scanned"])
@pytest.mark.parametrize(
    ("where", "value", "message"),
    [  # document_indices[2], the end of document 1: 2 -> 0
        (34 + 12 * 4 + 8 * 2, struct.pack("<q", 0), "document 1: document_indices out of order or a negative sequence"),
        (  # the end of document 0 far past every sequence
            34 + 12 * 4 + 8 * 1,
            struct.pack("<q", 2**40),
            "document 0: document_indices ",  # out of order when opened, outside the sequences while scanned
        ),
    ],
    ids=["decreasing", "past-the-end"],
)
def test_a_corrupt_megatron_index_is_one_line_naming_the_document(tmp_path, monkeypatch, found, where, value, message):
    """Never a crash: a bound past the sequences would make the pass read beyond the mapped window (SIGBUS)."""
    import freqlab.corpus.token_files as token_files

    if found == "while scanned":  # beyond the documents the EOS check reads
        monkeypatch.setattr(token_files, "EOS_CHECKED", 1)
    idx = write_megatron(tmp_path / "bad", single_sequence_documents([4, 5, 6, 7]))
    raw = bytearray(idx.read_bytes())
    raw[where : where + len(value)] = value
    idx.write_bytes(bytes(raw))
    result = CliRunner().invoke(main, ["scan", "--dataset", str(idx), "-q", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert message in result.output and "(corrupt index)" in result.output
    assert "bad.idx" in result.output


def test_a_negative_sequence_length_is_one_line_naming_the_document(tmp_path):
    """Past the first 1,024 sequences (whose pointers are checked against their lengths when the file is opened)
    a negative int32 length is found by the counting pass."""
    idx = write_megatron(tmp_path / "neg", single_sequence_documents([3] * 1100))
    raw = bytearray(idx.read_bytes())
    raw[34 + 4 * 1050 : 34 + 4 * 1051] = struct.pack("<i", -5)  # sequence_lengths[1050]: document 1050's
    idx.write_bytes(bytes(raw))
    result = CliRunner().invoke(main, ["scan", "--dataset", str(idx), "-q", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "document 1050: document_indices out of order or a negative sequence length" in result.output


@pytest.mark.parametrize("batch", [3, 10_000])
def test_a_sequence_length_damaged_past_the_first_ones_is_one_line_not_a_histogram(tmp_path, monkeypatch, batch):
    """Only the first 1,024 lengths and the last were checked against the pointers: a length of 2*10^9 at sequence
    2,000 gave a histogram whose longest document was 2*10^9 tokens, exit 0 (a review). Each batch's lengths now sum
    to the bytes its sequences span; batches of 3 documents and one batch of all."""
    import freqlab.corpus.token_files as token_files

    monkeypatch.setattr(token_files, "BATCH_DOCUMENTS", batch)
    idx = write_megatron(tmp_path / "big", single_sequence_documents([3] * 3000))
    raw = bytearray(idx.read_bytes())
    raw[34 + 4 * 2000 : 34 + 4 * 2001] = struct.pack("<i", 2_000_000_000)  # sequence_lengths[2000]
    idx.write_bytes(bytes(raw))
    result = CliRunner().invoke(main, ["scan", "--dataset", str(idx), "-q", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    first, last = (1998, 2000) if batch == 3 else (0, 2999)
    total, span = 3 * (last - first) + 2_000_000_000, 4 * 3 * (last - first + 1)
    assert result.output.startswith(f"Error: {idx}: ")
    assert (
        f"documents {first:,}..{last:,}: their sequence lengths sum to {total:,} tokens, but their sequences span "
        f"{span:,} bytes of the .bin (int32); corrupt index"
    ) in result.output


@pytest.mark.parametrize("regime", [[], ["--regime", "megatron", "--reset-attention-mask", "--L", "8"]])
def test_negative_sequence_pointers_are_one_line_not_a_wrapped_read(tmp_path, regime):
    """Pointers past the first 1,024 (those are checked against the lengths when the index is opened) are checked
    where the EOS check reads the .bin: a negative one would read a token from the end (numpy wraps it) and make
    --reset-attention-mask count as "no EOS appended"."""
    idx = write_megatron(tmp_path / "neg", [[[3, 4, 5], [6, 7, 2]] for _ in range(600)])  # 1,200 sequences
    raw = bytearray(idx.read_bytes())
    at = 34 + 4 * 1200 + 8 * 1101  # sequence_pointers[1101]: document 550's last sequence
    raw[at : at + 8] = struct.pack("<q", -8)
    idx.write_bytes(bytes(raw))
    result = CliRunner().invoke(main, ["scan", "--dataset", str(idx), "-q", "--out", str(tmp_path / "o"), *regime])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    if regime:  # the same index named by --data-path beside a good one that is scanned
        good = write_megatron(tmp_path / "good", single_sequence_documents([4, 5, 6]))
        other = CliRunner().invoke(
            main,
            [
                "scan",
                "--dataset",
                str(good),
                "-q",
                "--out",
                str(tmp_path / "o"),
                *regime,
                "--data-path",
                str(tmp_path / "neg"),
            ],
        )
        assert other.output == result.output and other.exit_code == 1
    assert result.output == (
        f"Error: {tmp_path / 'neg'}.idx: sequence 1,101 points at byte -8, outside {tmp_path / 'neg'}.bin "
        "(14,400 bytes); is the index corrupt?\n"
    )


def test_an_empty_tokenized_corpus_loads_no_tokenizer_and_names_none(tmp_path):
    idx = write_megatron(tmp_path / "empty", [])
    result = CliRunner().invoke(main, ["scan", "--dataset", str(idx), "-q", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "tokenizer  none: lengths read from tokenized data" in result.output and "tekken" not in result.output
    assert scan(str(idx), progress=False).summary["tokenizer"] is None


def _bad_index(tmp_path: Path, case: str) -> Path:
    idx = write_megatron(tmp_path / case, single_sequence_documents([4, 5, 6]))
    raw = idx.read_bytes()
    if case == "bad-header":
        idx.write_bytes(b"NOTANIDX!" + raw[9:])
    elif case == "truncated":
        idx.write_bytes(raw[:-12])
    elif case == "short-bin":  # 15 int32 tokens written, 10 left: a count, not "10.0 tokens"
        idx.with_suffix(".bin").write_bytes(idx.with_suffix(".bin").read_bytes()[:40])
    else:  # dtype-mismatch: the index says uint16 tokens, the .bin holds int32 ones
        idx.write_bytes(raw[:17] + struct.pack("<B", 8) + raw[18:])
    return idx


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("bad-header", "not a Megatron index (bad header b'NOTANIDX!'"),
        ("truncated", "truncated index: 90 bytes, but its header (3 sequences, 3 documents) needs 102"),
        # a review: "-1 bytes expected, 1,440.0 tokens found"
        ("dtype-mismatch", "sequence 1 starts 16 bytes after sequence 0, whose 4 uint16 tokens take 8: the sizes and"),
        ("short-bin", "short-bin.bin: 40 bytes, but {idx} says int32 tokens (60 bytes expected, 10 tokens found)"),
    ],
)
def test_bad_megatron_index_is_one_line(tmp_path, case, message):
    idx = _bad_index(tmp_path, case)
    result = CliRunner().invoke(main, ["scan", "--dataset", str(idx), "-q", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and result.output.startswith("Error: ")
    assert message.format(idx=idx) in result.output and str(tmp_path / case) in result.output


# ---- datatrove ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tekken_json(tmp_path_factory) -> Path:
    from freqlab.tokenization.export import tekken_to_hf_json

    path = tmp_path_factory.mktemp("tekken") / "tokenizer.json"
    path.write_text(tekken_to_hf_json(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def texts() -> list[str]:
    from freqlab.corpus import builtin_corpus

    docs = [d.text[:3000] for k, d in enumerate(builtin_corpus().documents()) if k % 50 == 0][:30]
    return [*docs, ""]


def test_datatrove_ds_equals_tokenizing_the_text_plus_its_eos(tmp_path, tekken_json, texts, monkeypatch):
    """datatrove's DocumentTokenizer (local tokenizer.json, offline) appends </s> to every document; the .ds
    lengths are the Tekken counts of the same texts (freqlab's own scan of them) plus that one token."""
    pytest.importorskip("datatrove")
    from datatrove.data import Document
    from datatrove.pipeline.tokens import DocumentTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    step = DocumentTokenizer(
        str(tmp_path / "ds"),
        tokenizer_name_or_path=str(tekken_json),
        eos_token="</s>",
        shuffle_documents=False,
        save_filename="part",
    )
    step.run(iter(Document(text=t, id=str(k)) for k, t in enumerate(texts)))
    (ds,) = sorted((tmp_path / "ds").glob("*.ds"))
    jsonl = tmp_path / "texts.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    text_result = scan(str(jsonl), tokenizer="tekken", workers=1, progress=False)
    expected = np.repeat(text_result.histogram.lengths, text_result.histogram.counts) + 1
    expected = sorted([*expected.tolist(), *[1] * text_result.histogram.empty_documents])
    assert sorted(lengths_of(ds)) == expected
    description = open_corpus(str(ds)).description
    assert description["eos"]["appended"] is True and description["eos"]["eos_id"] == 2  # </s> in Tekken


def test_datatrove_truncated_ds_is_one_line(tmp_path):
    (tmp_path / "a.ds").write_bytes(np.arange(5, dtype="<u2").tobytes())
    (tmp_path / "a.ds.index").write_bytes(np.array([2, 6], "<u8").tobytes())
    with pytest.raises(FreqlabError, match=r"a.ds: 10 bytes, but its index ends at token 6"):
        open_corpus(str(tmp_path / "a.ds"))
    os.remove(tmp_path / "a.ds.index")
    with pytest.raises(FreqlabError, match=r"no a.ds.index beside it"):
        open_corpus(str(tmp_path / "a.ds"))


def test_a_datatrove_ds_holding_twice_its_index_tokens_is_refused(tmp_path):
    """Without NAME.ds.metadata the token size is what makes the sizes agree: 4 bytes per indexed token is
    uint32 ids, or twice the index's uint16 tokens, which read as uint32 are far above any vocabulary."""
    rng = np.random.default_rng(0)
    ends = np.array([300, 700, 1000], "<u8")
    (tmp_path / "twice.ds").write_bytes(rng.integers(3, 50_000, 2000).astype("<u2").tobytes())
    (tmp_path / "twice.ds.index").write_bytes(ends.tobytes())
    with pytest.raises(
        FreqlabError,
        match=r"twice\.ds: 4 bytes per token of its index, but read as uint32 its "
        r"tokens reach [\d,]+, no vocabulary's ids: twice the index's uint16",
    ):
        open_corpus(str(tmp_path / "twice.ds"))
    # a real uint32 file (a vocabulary above 65,536) without metadata is read as such
    (tmp_path / "wide.ds").write_bytes(rng.integers(3, 200_000, 1000).astype("<u4").tobytes())
    (tmp_path / "wide.ds.index").write_bytes(ends.tobytes())
    assert lengths_of(tmp_path / "wide.ds") == [300, 400, 300]


def test_a_datatrove_index_whose_first_ends_pass_the_ds_is_one_line(tmp_path):
    """A review: ends rising past the .ds's tokens, then one back at its size (a corrupt index), were read as
    token positions by the EOS check: an IndexError's traceback."""
    np.array([1, 2, 3, 4, 2], np.uint16).tofile(tmp_path / "a.ds")
    np.append(np.arange(1000, dtype=np.uint64) + 10, np.uint64(5)).tofile(tmp_path / "a.ds.index")
    with pytest.raises(FreqlabError, match=r"a\.ds: document 0 ends at token 10, beyond the file's 5 tokens; is the"):
        open_corpus(str(tmp_path / "a.ds"))


def test_an_end_past_2_63_is_named_as_the_index_holds_it(tmp_path):
    np.array([1, 2, 3, 4, 2], np.uint16).tofile(tmp_path / "a.ds")
    np.array([2, 2**63 + 1, 5], np.uint64).tofile(tmp_path / "a.ds.index")  # not -9223372036854775807
    with pytest.raises(FreqlabError, match=r"document 1 ends at token 9,223,372,036,854,775,809, past 2\^63 - 1"):
        lengths_of(tmp_path / "a.ds")


def test_datatrove_lengths_across_batches_are_the_differences_of_the_ends(tmp_path, monkeypatch):
    import freqlab.corpus.token_files as token_files

    monkeypatch.setattr(token_files, "BATCH_DOCUMENTS", 4)
    lengths = [(k * 7) % 5 for k in range(23)]  # empty documents among them
    ends = np.cumsum(lengths).astype("<u8")
    (tmp_path / "d.ds").write_bytes(np.zeros(int(ends[-1]), "<u2").tobytes())
    (tmp_path / "d.ds.index").write_bytes(ends.tobytes())
    assert lengths_of(tmp_path / "d.ds") == lengths
    ends[9] = ends[8] - 1  # document 9 would end before it starts
    (tmp_path / "d.ds.index").write_bytes(ends.tobytes())
    result = CliRunner().invoke(main, ["scan", "--dataset", str(tmp_path / "d.ds"), "-q"])
    assert result.exit_code == 1 and "document ends decrease at document 9" in result.output


# ---- Hugging Face token columns -------------------------------------------------------------------------


def test_token_and_length_columns_written_by_datasets(tmp_path):
    import datasets

    table = datasets.Dataset.from_dict(
        {
            "input_ids": [[1, 2, 3], [4], [], [5, 6]],
            "n": [3, 1, 0, 2],
            "lang": ["en", "en", "de", "en"],
        }
    )
    table.to_parquet(str(tmp_path / "t.parquet"))
    table.save_to_disk(str(tmp_path / "saved"))
    for spec in (tmp_path / "t.parquet", tmp_path / "saved"):
        assert lengths_of(spec) == [3, 1, 0, 2]  # input_ids found without --tokens-field: there is no text column
    assert lengths_of(tmp_path / "t.parquet", read=ReadOptions(length_field="n")) == [3, 1, 0, 2]
    result = scan(str(tmp_path / "t.parquet"), source_field="lang", tokens_field="input_ids", workers=1, progress=False)
    assert {k: h.tokens for k, h in result.histogram.sources.items()} == {"de": 0, "en": 6}
    assert result.summary["corpus"]["description"]["read_options"] == {"tokens_field": "input_ids"}


def test_a_length_column_of_strings_is_one_line(tmp_path):
    import datasets

    datasets.Dataset.from_dict({"n": ["3"]}).to_parquet(str(tmp_path / "t.parquet"))
    with pytest.raises(FreqlabError, match="the length column holds string, not integers"):
        lengths_of(tmp_path / "t.parquet", read=ReadOptions(length_field="n"))


# ---- numpy token streams --------------------------------------------------------------------------------


def test_npy_stream_split_after_each_eos(tmp_path):
    np.save(tmp_path / "s.npy", np.array([5, 6, 0, 7, 0, 0, 8, 9, 9, 0, 4, 4], np.uint16))
    assert lengths_of(tmp_path / "s.npy", read=ReadOptions(eos_id=0)) == [3, 2, 1, 4, 2]
    with pytest.raises(FreqlabError, match="needs --eos-id"):
        open_corpus(str(tmp_path / "s.npy"))
    with pytest.raises(FreqlabError, match=r"s.npy: eos_id 70000 cannot occur in this file \(tokens below 65536\)"):
        open_corpus(str(tmp_path / "s.npy"), read=ReadOptions(eos_id=70000))  # uint16 tokens


def test_an_empty_npy_is_one_line_naming_it_not_an_interrupt(tmp_path):
    """A review: numpy's EOFError on a 0-byte .npy reached click, which took it for Ctrl-D: "interrupted", exit 130."""
    (tmp_path / "h.npy").write_bytes(b"")
    with pytest.raises(FreqlabError, match=r"h\.npy: not a NumPy array file \(0 bytes\)"):
        open_corpus(str(tmp_path / "h.npy"), read=ReadOptions(eos_id=0))
    result = CliRunner().invoke(
        main, ["scan", "--dataset", str(tmp_path / "h.npy"), "--eos-id", "0", "-q", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 1 and "h.npy: not a NumPy array file" in result.output


def test_npy_arrays_are_streams_of_their_own_without_padding(tmp_path):
    """A review: lone EOS tokens at the end of an .npy were dropped as lit-gpt's padding (``[5, 2, 2, 2]``: one
    document for three; ``[2, 2, 2]``: none), two arrays were read as one stream (a document running from one into
    the next), and arrays of two dtypes were added together. An array is its own stream, a lone EOS a document."""
    np.save(tmp_path / "t1.npy", np.array([5, 2, 2, 2], np.int32))
    assert lengths_of(tmp_path / "t1.npy", read=ReadOptions(eos_id=2)) == [2, 1, 1]
    np.save(tmp_path / "t1.npy", np.array([2, 2, 2], np.int32))
    assert lengths_of(tmp_path / "t1.npy", read=ReadOptions(eos_id=2)) == [1, 1, 1]
    folder = tmp_path / "multi"
    folder.mkdir()
    np.save(folder / "a.npy", np.array([5, 5, 2, 7, 7], np.int32))  # its last document without EOS
    np.save(folder / "b.npy", np.array([8, 2, 9], np.int32))
    assert sorted(lengths_of(folder, read=ReadOptions(eos_id=2))) == sorted([3, 2, 2, 1])
    np.save(folder / "c.npy", np.array([8, 2, 9], np.uint16))
    with pytest.raises(FreqlabError, match=r"token streams of different dtypes: int32 \(.*a.npy\), uint16 \(.*c.npy\)"):
        open_corpus(str(folder), read=ReadOptions(eos_id=2))


def test_an_eos_id_that_never_occurs_is_refused_never_one_huge_document(tmp_path):
    """A wrong --eos-id would make the whole stream one document (and the summary say the EOS was appended)."""
    np.save(tmp_path / "s.npy", np.tile(np.array([5, 6, 7, 3], np.uint16), 250_000))  # 10^6 tokens, no 2
    result = CliRunner().invoke(
        main, ["scan", "--dataset", str(tmp_path / "s.npy"), "--eos-id", "2", "-q", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 1
    assert result.output == (
        f"Error: --eos-id 2 never occurs in {tmp_path / 's.npy'} (1,000,000 tokens): it would be one document; "
        "give the EOS id of the tokenizer that wrote it\n"
    )
    assert lengths_of(tmp_path / "s.npy", read=ReadOptions(eos_id=3)) == [4] * 250_000  # the right id


def lit_run(folder, prefix: str, documents: list[list[int]], chunk_size: int, sep: int) -> None:
    """The files lit-gpt's PackedDatasetBuilder writes for ``documents`` (lit_gpt/packed_dataset.py): chunks of
    ``chunk_size`` tokens named ``{prefix}_{counter:010d}.bin``, each with its 24-byte header, the last one (written
    by ``write_reminder``) padded with ``sep``."""
    stream = [token for document in documents for token in document]
    chunks = max(1, -(-len(stream) // chunk_size))
    stream += [sep] * (chunks * chunk_size - len(stream))
    header = b"LITPKDS" + struct.pack("<Q", 1) + struct.pack("<B", 8) + struct.pack("<Q", chunk_size)
    for number in range(chunks):
        tokens = np.array(stream[number * chunk_size : (number + 1) * chunk_size], np.uint16)
        (folder / f"{prefix}_{number:010d}.bin").write_bytes(header + tokens.tobytes())


def test_lit_gpt_chunks_are_one_stream_and_the_last_chunks_padding_is_dropped(tmp_path):
    """lit-gpt's PackedDatasetBuilder layout: 24-byte header, chunks of chunk_size tokens, a document may
    continue into the next file, the last chunk padded with the separator."""
    lit_run(tmp_path, "p", [[5, 6, 1], [7, 7, 7, 7, 1], [8, 1]], chunk_size=6, sep=1)
    assert lengths_of(tmp_path, read=ReadOptions(eos_id=1)) == [3, 5, 2]


def test_each_lit_gpt_run_is_a_stream_with_its_own_padding(tmp_path):
    """A review: TinyLlama's prepare_slimpajama.py runs one builder per process (prefixes train_slimpajama_0,
    train_slimpajama_1, ...), each run ending in its own padding; read as one stream, the padding of every run but
    the last became documents of one token (184,233 of them on 2,643 documents)."""
    documents = {
        "train_slimpajama_0": [[5, 6, 2], [7, 2]],
        "train_slimpajama_1": [[9, 9, 9, 2], [4, 2], [3, 3, 2]],
        "train_slimpajama_2": [[8, 2]],
    }
    for prefix, docs in documents.items():
        lit_run(tmp_path, prefix, docs, chunk_size=4, sep=2)
    expected = sorted(len(doc) for docs in documents.values() for doc in docs)
    assert sorted(lengths_of(tmp_path, read=ReadOptions(eos_id=2))) == expected
    corpus = open_corpus(str(tmp_path), read=ReadOptions(eos_id=2))
    assert [shard.id for shard in corpus.shards] == [
        "train_slimpajama_0_0000000000.bin..train_slimpajama_0_0000000001.bin",
        "train_slimpajama_1_0000000000.bin..train_slimpajama_1_0000000002.bin",
        "train_slimpajama_2_0000000000.bin",
    ]


def test_lit_gpt_padding_by_another_separator_is_no_document(tmp_path):
    """A review: TinyLlama's builder pads with sep_token = BOS (1) while documents end with EOS (2): the padding
    after the last EOS was one last document of 50,435 tokens. Tokens after the last EOS that are all one token are
    that padding; others are a last document without EOS."""
    lit_run(tmp_path, "t", [[5, 6, 2], [7, 2], [2]], chunk_size=4, sep=1)  # 6 tokens, then 2 of padding
    assert lengths_of(tmp_path, read=ReadOptions(eos_id=2)) == [3, 2, 1]  # the lone EOS: an empty document
    lit_run(tmp_path, "t", [[5, 6, 2], [7, 2, 9, 9, 9, 9]], chunk_size=4, sep=1)  # a whole chunk of padding after it
    lit_run(tmp_path, "t", [[5, 6, 2], [7, 2]], chunk_size=5, sep=1)  # one chunk: rewritten files of 5 tokens
    for stale in ("t_0000000001.bin", "t_0000000002.bin"):
        (tmp_path / stale).unlink(missing_ok=True)
    assert lengths_of(tmp_path, read=ReadOptions(eos_id=2)) == [3, 2]
    lit_run(tmp_path, "t", [[5, 6, 2], [7, 8, 8]], chunk_size=6, sep=1)  # a last document without EOS, unpadded
    assert lengths_of(tmp_path, read=ReadOptions(eos_id=2)) == [3, 3]
    lit_run(tmp_path, "t", [[5, 6, 2], [7, 2], [1, 1, 1, 1, 1, 1, 1, 1]], chunk_size=4, sep=1)
    lengths = lengths_of(tmp_path, read=ReadOptions(eos_id=2))
    assert lengths == [3, 2], "a run of the separator after the last EOS is padding, however long"


def test_a_lit_gpt_chunk_cut_inside_its_header_says_so(tmp_path):
    """An adversary: a chunk cut inside its 24-byte header was "bad header b'LITPKDS', expected b'LITPKDS'"."""
    lit_run(tmp_path, "p", [[5, 6, 1]], chunk_size=3, sep=1)
    chunk = tmp_path / "p_0000000000.bin"
    chunk.write_bytes(chunk.read_bytes()[:20])
    with pytest.raises(FreqlabError, match=r"p_0000000000\.bin: 20 bytes, cut inside its 24-byte lit-gpt header$"):
        lengths_of(tmp_path, read=ReadOptions(eos_id=1))


def test_a_lit_gpt_run_of_nothing_but_padding_adds_no_document(tmp_path):
    """A second review: a builder given no document (a process whose rows were all filtered out) writes one chunk of
    its separator; the scan failed with "--eos-id 2 never occurs", the EOS id being right."""
    lit_run(tmp_path, "train_0", [[5, 6, 2], [7, 2]], chunk_size=4, sep=1)
    lit_run(tmp_path, "train_1", [], chunk_size=4, sep=1)
    assert lengths_of(tmp_path, read=ReadOptions(eos_id=2)) == [3, 2]


def test_a_truncated_or_gapped_lit_gpt_run_is_refused(tmp_path):
    """A review: 100,000 bytes cut off a chunk lost 50,000 tokens and joined the documents around the cut, silently.
    Every chunk holds its header's chunk size; a run with a chunk missing would join documents across the gap."""
    lit_run(tmp_path, "p", [[5, 6, 2], [7, 7, 7, 7, 2], [8, 2], [3, 3, 3, 2]], chunk_size=4, sep=2)
    path = tmp_path / "p_0000000001.bin"
    os.truncate(path, path.stat().st_size - 2)
    with pytest.raises(
        FreqlabError, match=r"p_0000000001\.bin: 3 tokens, but its header's chunk size is 4 .*truncated"
    ):
        open_corpus(str(tmp_path), read=ReadOptions(eos_id=2))
    path.unlink()
    with pytest.raises(
        FreqlabError, match=r"p_0000000000\.bin: the next chunk of its run, p_0000000001\.bin, is missing"
    ):
        open_corpus(str(tmp_path), read=ReadOptions(eos_id=2))


def test_an_index_that_shrinks_during_a_scan_is_an_error_not_a_crash(tmp_path):
    """Windows of the index are memory-mapped: touching a mapped byte past the end of a file that shrank would
    kill the worker (SIGBUS), so the size is checked before every window."""
    from freqlab.corpus.token_files import IndexFile

    path = tmp_path / "x.idx"
    path.write_bytes(np.arange(100, dtype=np.int64).tobytes())
    with IndexFile(str(path)) as index:
        assert index.run(0, np.int64, 10, 20).tolist() == list(range(10, 20))
        assert index.run(8, np.int32, 0, 3).tolist() == [1, 0, 2]  # another dtype, at an offset
        os.truncate(path, 8 * 50)
        with pytest.raises(ValueError, match="the index ends at byte 400, before byte 800; did it change"):
            index.run(0, np.int64, 90, 100)


def test_a_token_stream_cut_while_it_is_read_is_an_error_not_a_crash(tmp_path, monkeypatch):
    """A review: a .npy truncated during a scan killed the process (SIGBUS: its tokens were memory-mapped, a page
    past the new end touched). Chunks are read, not mapped: a short read names the file that changed."""
    import freqlab.corpus.token_files as token_files

    monkeypatch.setattr(token_files, "CHUNK_TOKENS", 4)
    np.save(tmp_path / "a.npy", np.array([5, 2, 7, 7, 2, 9, 9, 9, 2, 1, 2, 2], np.uint16))
    shard = open_corpus(str(tmp_path / "a.npy"), read=ReadOptions(eos_id=2)).shards[0]
    batches = shard.read_lengths()
    assert next(batches).lengths.tolist() == [2]
    os.truncate(tmp_path / "a.npy", 128 + 2 * 6)  # the header and 6 of its 12 tokens
    with pytest.raises(
        FreqlabError, match=r"a\.npy changed while it was being read \(4 of 8 bytes read at byte 136: cut short\)"
    ):
        list(batches)
    np.save(tmp_path / "b.npy", np.array([5, 2, 7, 7, 2, 9, 9, 9, 2, 1, 2, 2], ">u2"))  # big-endian, read as such
    assert lengths_of(tmp_path / "b.npy", read=ReadOptions(eos_id=2)) == [2, 3, 4, 2, 1]


def test_a_npy_shorter_than_its_header_is_said_truncated_not_of_another_format(tmp_path):
    """A review: a .npy cut between the folder's listing and its read was "not a NumPy array file"."""
    np.save(tmp_path / "a.npy", np.arange(1000, dtype=np.uint16))
    os.truncate(tmp_path / "a.npy", 500)
    with pytest.raises(FreqlabError, match=r"a\.npy: shorter than its header says: truncated, or cut while it was"):
        lengths_of(tmp_path / "a.npy", read=ReadOptions(eos_id=5))


def test_a_npy_header_is_read_not_mapped_so_a_hostile_one_is_one_line_saying_what_it_is(tmp_path):
    """A review: a header claiming 2^62 tokens was mmap's OverflowError and a traceback; an object array or a header
    cut short were "not a NumPy array file"."""
    np.save(tmp_path / "good.npy", np.arange(8, dtype=np.uint16))
    raw = (tmp_path / "good.npy").read_bytes()
    length = struct.unpack("<H", raw[8:10])[0]
    header = "{'descr': '<u2', 'fortran_order': False, 'shape': (4611686018427387904,), }".ljust(length - 1) + "\n"
    (tmp_path / "huge.npy").write_bytes(raw[:10] + header.encode() + raw[10 + length :])
    huge = r"huge\.npy: shorter than its header says: .* \(4,611,686,018,427,387,904 uint16 tokens in 16 bytes\)$"
    (tmp_path / "cut.npy").write_bytes(raw[:40])
    np.save(tmp_path / "object.npy", np.array([1, "x", None], dtype=object), allow_pickle=True)
    (tmp_path / "v9.npy").write_bytes(raw[:6] + b"\x09\x00" + raw[8:])
    for name, shape in (("bool", "(True,)"), ("negative", "(-8,)")):  # numpy's own check lets both through
        text = f"{{'descr': '<u2', 'fortran_order': False, 'shape': {shape}, }}".ljust(length - 1) + "\n"
        (tmp_path / f"{name}.npy").write_bytes(raw[:10] + text.encode() + raw[10 + length :])
    for name, message in (
        ("huge", huge),
        ("bool", r"bool\.npy: its header's shape \(True,\) is not a number of tokens$"),
        ("negative", r"negative\.npy: its header's shape \(-8,\) is not a number of tokens$"),
        ("cut", r"cut\.npy: its header is cut short \(EOF: reading array header, expected \d+ bytes got 30\)"),
        ("object", r"object\.npy: a token stream is a 1-D integer array, not \(3,\) object$"),
        ("v9", r"v9\.npy: NumPy format 9\.0 \(numpy writes 1\.0, 2\.0 and 3\.0\)$"),
    ):
        with pytest.raises(FreqlabError, match=message):
            lengths_of(tmp_path / f"{name}.npy", read=ReadOptions(eos_id=2))
    assert lengths_of(tmp_path / "good.npy", read=ReadOptions(eos_id=2)) == [3, 5]
    for version in ((2, 0), (3, 0)):  # 3.0: a UTF-8 header, as numpy writes when asked (a review: it was refused)
        with open(tmp_path / "written.npy", "wb") as handle:
            np.lib.format.write_array(handle, np.arange(8, dtype=">u2"), version=version)
        assert lengths_of(tmp_path / "written.npy", read=ReadOptions(eos_id=2)) == [3, 5]
    with open(tmp_path / "long.npy", "wb") as handle:  # a header past numpy's 10,000-byte default, still read
        handle.write(b"\x93NUMPY\x02\x00" + struct.pack("<I", 20_000))
        handle.write(b"{'descr': '<u2', 'fortran_order': False, 'shape': (8,), }".ljust(19_999) + b"\n")
        handle.write(np.arange(8, dtype="<u2").tobytes())
    assert lengths_of(tmp_path / "long.npy", read=ReadOptions(eos_id=2)) == [3, 5]


def test_a_npy_whose_header_numpy_cannot_parse_is_one_line(tmp_path):
    """An adversary: a header with an unbalanced bracket or a non-string key was a traceback (tokenize's TokenError,
    TypeError), another magic numpy's advice to load pickled data unsafely."""
    np.save(tmp_path / "good.npy", np.arange(8, dtype=np.int32))
    raw = (tmp_path / "good.npy").read_bytes()
    start, length = 10, struct.unpack("<H", raw[8:10])[0]
    for name, header in (
        ("bracket", "{'descr': '<i4', 'fortran_order': False, 'shape': (8,, }"),
        ("key", "{'descr': '<i4', 'fortran_order': False, 'shape': (8,), 1: 2}"),
    ):
        text = header.ljust(length - 1) + "\n"
        (tmp_path / f"{name}.npy").write_bytes(raw[:start] + text.encode() + raw[start + length :])
        with pytest.raises(FreqlabError, match=rf"{name}\.npy: not a NumPy array file \("):
            lengths_of(tmp_path / f"{name}.npy", read=ReadOptions(eos_id=2))
    (tmp_path / "magic.npy").write_bytes(b"PK\x03\x04" + raw[4:])
    magic = r"magic\.npy: not a NumPy array file \(it begins b'PK\\x03\\x04PY', not b'\\x93NUMPY'\)$"
    with pytest.raises(FreqlabError, match=magic):
        lengths_of(tmp_path / "magic.npy", read=ReadOptions(eos_id=2))


def test_the_eos_checks_read_last_tokens_not_a_map_of_the_file(tmp_path):
    """The EOS checks of Megatron and datatrove files read the tokens they look at (a review: they memory-mapped the
    .bin/.ds, and a file cut after its index was read would kill the process when a page past its end was touched);
    a file cut since is a short read naming it."""
    from freqlab.corpus.datatrove import read_ds
    from freqlab.corpus.file_discovery import FileChanged
    from freqlab.corpus.megatron import read_index

    from .tokenized_writers import write_megatron

    write_megatron(tmp_path / "m", [[[5, 2]], [[7, 7], [9, 2]], [[4]]], np.uint16)
    index = read_index(str(tmp_path / "m.idx"))
    assert index.bin_tokens == 7
    tokens, documents = index.last_tokens_and_documents(1000)
    assert tokens.tolist() == [2, 2, 4] and documents.tolist() == [0, 1, 2]
    os.truncate(tmp_path / "m.bin", 2 * 5)
    with pytest.raises(FileChanged, match=r"token 5 is past the file's end") as error:  # of 0..4 left
        index.last_tokens(1000)
    assert error.value.path == str(tmp_path / "m.bin")

    (tmp_path / "a.ds").write_bytes(np.array([5, 2, 7, 9, 9, 2], "<u2").tobytes())
    (tmp_path / "a.ds.index").write_bytes(np.array([2, 6], "<u8").tobytes())
    ds = read_ds(str(tmp_path / "a.ds"))
    assert ds.last_tokens(1000).tolist() == [2, 2]
    os.truncate(tmp_path / "a.ds", 2 * 3)
    with pytest.raises(FileChanged, match=r"token 5 is past the file's end") as error:
        ds.last_tokens(1000)
    assert error.value.path == str(tmp_path / "a.ds")


def test_a_megatron_last_pointer_off_by_less_than_a_token_is_refused_whatever_the_bins_size(tmp_path):
    """A review: the .bin's size in tokens, rounded down, let a last pointer one byte off pass the size check (past
    the first 1,024 sequences, whose pointers are checked one by one)."""
    from freqlab.corpus.megatron import HEADER

    from .tokenized_writers import write_megatron

    write_megatron(tmp_path / "m", [[[5, 2]]] * 1100, np.uint16)
    raw = bytearray((tmp_path / "m.idx").read_bytes())
    at = HEADER.size + 4 * 1100 + 8 * 1099  # the last sequence's pointer
    assert struct.unpack("<q", raw[at : at + 8]) == (4396,)
    raw[at : at + 8] = struct.pack("<q", 4397)  # half a token in
    (tmp_path / "m.idx").write_bytes(bytes(raw))
    for size in (4400, 4401):  # the tokens' size, or the size the index points to
        (tmp_path / "m.bin").write_bytes(bytes(size))
        with pytest.raises(FreqlabError, match=r"m\.idx: the last sequence starts at byte 4,397, not a whole number"):
            open_corpus(str(tmp_path / "m.idx"))


def test_an_eos_id_for_files_that_take_none_is_refused_not_ignored(tmp_path):
    """A review: --eos-id beside Parquet token columns or text was recorded and checked nothing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"input_ids": [[1, 2], [3]]}), tmp_path / "t.parquet")
    (tmp_path / "x.jsonl").write_text('{"text": "a b"}\n')
    for name, kind in (("t.parquet", "parquet"), ("x.jsonl", "jsonl")):
        with pytest.raises(FreqlabError, match=rf"{name}: --eos-id 5 cuts token streams .* {kind} files take none"):
            open_corpus(str(tmp_path / name), read=ReadOptions(eos_id=5))
    result = CliRunner().invoke(
        main, ["scan", "--dataset", str(tmp_path / "t.parquet"), "--tokens-field", "input_ids", "--length-field", "n"]
    )
    assert result.exit_code == 2 and "--tokens-field and --length-field: give one" in result.output


@pytest.mark.parametrize("option", ["tokens_field", "length_field"])
def test_a_token_or_length_column_named_for_json_lines_is_refused_not_ignored(tmp_path, option):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"text": "a b", "input_ids": [1, 2], "n": 2}) + "\n")
    column = "input_ids" if option == "tokens_field" else "n"
    flag = "--" + option.replace("_", "-")
    with pytest.raises(FreqlabError, match=rf"{flag} '{column}' reads a column of Parquet or Arrow files.*jsonl"):
        open_corpus(str(path), read=ReadOptions(**{option: column}))


def test_a_lit_gpt_run_missing_its_first_chunk_is_refused(tmp_path):
    """A new user's trial: with chunk 0 of a run gone, the partial document at the start of chunk 1 was counted as a
    whole one (84 documents for 86), silently."""
    lit_run(tmp_path, "train_1", [[5, 6, 7, 2], [8, 8, 2], [9, 2]], chunk_size=4, sep=2)
    (tmp_path / "train_1_0000000000.bin").unlink()
    with pytest.raises(FreqlabError, match=r"train_1_0000000001\.bin: its run starts at chunk 1: train_1_0000000000"):
        open_corpus(str(tmp_path), read=ReadOptions(eos_id=2))


def test_a_fifo_in_place_of_a_tokenized_file_is_no_regular_file_not_truncated(tmp_path):
    """A new user's trial: a FIFO as NAME.ds.index or PREFIX.bin read as 0 bytes: "truncated, or a token size
    mismatch" blamed the data."""
    from .tokenized_writers import single_sequence_documents, write_megatron

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.ds").write_bytes(np.full(4, 7, "<u2").tobytes())
    os.mkfifo(tmp_path / "d" / "a.ds.index")
    with pytest.raises(FreqlabError, match=r"a\.ds\.index: not a regular file"):
        open_corpus(str(tmp_path / "d" / "a.ds"))
    write_megatron(tmp_path / "m" / "c", single_sequence_documents([5, 7]))
    (tmp_path / "m" / "c.bin").unlink()
    os.mkfifo(tmp_path / "m" / "c.bin")
    with pytest.raises(FreqlabError, match=r"c\.bin: not a regular file"):
        open_corpus(str(tmp_path / "m" / "c.idx"))


def test_a_file_named_otherwise_is_no_chunk_of_a_run_whose_prefix_it_is(tmp_path):
    """A review: x.bin and x.bin_0000000001.bin were one run (x.bin taken for chunk 0): a document counted across two
    unrelated files, and the run missing its chunk 0 not refused."""
    header = b"LITPKDS" + struct.pack("<Q", 1) + struct.pack("<B", 8) + struct.pack("<Q", 4)
    (tmp_path / "x.bin").write_bytes(header + np.array([5, 2, 7, 7], np.uint16).tobytes())
    (tmp_path / "x.bin_0000000001.bin").write_bytes(header + np.array([7, 2, 1, 1], np.uint16).tobytes())
    with pytest.raises(FreqlabError, match=r"x\.bin_0000000001\.bin: its run starts at chunk 1"):
        open_corpus(str(tmp_path), read=ReadOptions(eos_id=2))
