"""A corpus never adds lengths measured in different units: text (counted by the scan's tokenizer) beside
tokenized files, or tokenized files of different kinds, vocabularies or EOS conventions, are refused in one line
naming what was found and how to choose (``--format``); text formats merge, and the report counts each."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.corpus import ReadOptions, open_corpus
from freqlab.errors import FreqlabError
from freqlab.scan import scan

from .tokenized_writers import single_sequence_documents, write_megatron

LENGTHS = [5, 7, 3, 9]  # the same four documents, tokenized, in each tokenized file


def write_ds(path: Path, lengths: list[int], tokenizer: str | None = None, eos: int = 2) -> Path:
    """A datatrove ``.ds`` (uint16 tokens, each document ending with ``eos``) with its ``.ds.index`` of
    cumulative ends, and ``.ds.metadata`` naming ``tokenizer`` when given."""
    tokens = np.concatenate([np.r_[np.full(n - 1, 7), eos] for n in lengths]).astype("<u2")
    path.write_bytes(tokens.tobytes())
    Path(f"{path}.index").write_bytes(np.cumsum(lengths).astype("<u8").tobytes())
    if tokenizer is not None:
        Path(f"{path}.metadata").write_text(f"{tokenizer}|2\n", encoding="utf-8")
    return path


def write_texts(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return path


TEXTS = ["hello world", "one two three four", ""]


@pytest.fixture
def mixed(tmp_path) -> Path:
    """The case of issue 22: a datatrove .ds, a Megatron .idx/.bin of the same documents and a .jsonl."""
    folder = tmp_path / "data"
    folder.mkdir()
    write_ds(folder / "part.ds", LENGTHS)
    write_megatron(folder / "corpus_text_document", single_sequence_documents(LENGTHS), np.uint16)
    write_texts(folder / "texts.jsonl", TEXTS)
    return folder


def test_text_beside_tokenized_files_is_refused_in_one_line_naming_the_formats(mixed):
    message = (
        r"text and tokenized files found together \(1 datatrove \(tokenized\), 1 jsonl \(text\), "
        r"1 megatron \(tokenized\)\): their lengths are in different units and are never added; "
        r"read one format with --format datatrove\|jsonl\|megatron"
    )
    with pytest.raises(FreqlabError, match=message):
        open_corpus(str(mixed))
    result = CliRunner().invoke(main, ["scan", "--dataset", str(mixed), "-q", "--out", str(mixed.parent / "out")])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and result.output.startswith("Error: ")
    assert not (mixed.parent / "out" / "lengths.parquet").exists()


def test_a_list_of_files_of_mixed_formats_is_the_same_error_not_a_type_error(mixed):
    with pytest.raises(FreqlabError, match=r"text and tokenized files found together"):
        scan([str(mixed / "part.ds"), str(mixed / "texts.jsonl")], progress=False)
    with pytest.raises(FreqlabError, match=r"either as dataset \(a list of paths\) or as data_files"):
        scan([str(mixed / "part.ds")], data_files=[str(mixed / "texts.jsonl")], progress=False)
    # a list of one kind is read like data_files
    result = scan([str(mixed / "part.ds"), str(mixed)], format="datatrove", workers=1, progress=False)
    assert result.histogram.documents_read == len(LENGTHS)  # the .ds named and found in the folder: read once


def test_tokenized_files_of_two_kinds_are_refused(mixed):
    (mixed / "texts.jsonl").unlink()
    with pytest.raises(
        FreqlabError,
        match=r"tokenized files of different kinds found together \(1 datatrove "
        r"\(tokenized\), 1 megatron \(tokenized\)\).*--format datatrove\|megatron",
    ):
        open_corpus(str(mixed))


def test_format_reads_one_format_and_counts_the_files_it_passes_over(mixed):
    only_text = scan(str(mixed), format="jsonl", workers=1, progress=False)
    alone = scan(str(mixed / "texts.jsonl"), workers=1, progress=False)
    assert only_text.histogram.documents_read == len(TEXTS)
    assert only_text.histogram.lengths.tolist() == alone.histogram.lengths.tolist()
    assert only_text.histogram.counts.tolist() == alone.histogram.counts.tolist()
    description = only_text.summary["corpus"]["description"]
    assert description["formats"] == {"jsonl": 1}
    assert description["other_formats"] == {"datatrove": 1, "megatron": 1}
    # the .ds.index and the .bin beside the .idx are not data files of any format: ignored as before
    assert description["ignored_files"] == 4
    # the two others said too (a review: "11 ignored (2 arrow, 3 parquet, 5 txt ...)" summed to 10)
    report = only_text.report()
    assert "1 file (0 empty, 4 ignored (1 datatrove, 1 megatron not of --format jsonl; 2 for another reason))" in report

    for name in ("megatron", "datatrove"):
        result = scan(str(mixed), format=name, workers=1, progress=False)
        counts = dict(zip(result.histogram.lengths.tolist(), result.histogram.counts.tolist(), strict=True))
        assert counts == {3: 1, 5: 1, 7: 1, 9: 1} and result.summary["tokenizer"] is None

    cli = CliRunner().invoke(
        main, ["scan", "--dataset", str(mixed), "--format", "megatron", "-q", "--out", str(mixed.parent / "out")]
    )
    assert cli.exit_code == 0 and "documents  4 read" in cli.output
    with pytest.raises(FreqlabError, match=r"no txt files found \(only 1 datatrove, 1 jsonl, 1 megatron\)"):
        open_corpus(str(mixed), format="txt")


def test_an_unknown_format_is_a_usage_error_before_any_file_is_read(mixed, tmp_path):
    result = CliRunner().invoke(
        main, ["scan", "--dataset", str(mixed), "--format", "csv", "-q", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2, result.output
    assert (
        "unknown format 'csv'; formats: jsonl, parquet, arrow, txt, megatron, datatrove, token-stream" in result.output
    )
    assert not (tmp_path / "out").exists()


def test_a_token_stream_beside_text_files_is_refused_even_with_eos_id(tmp_path):
    np.save(tmp_path / "s.npy", np.array([5, 6, 0, 7, 0], np.uint16))
    write_texts(tmp_path / "a.jsonl", TEXTS)
    (tmp_path / "b.txt").write_text("a document", encoding="utf-8")
    with pytest.raises(FreqlabError, match=r"\(1 jsonl \(text\), 1 token-stream \(tokenized\), 1 txt \(text\)\)"):
        open_corpus(str(tmp_path), read=ReadOptions(eos_id=0))
    result = CliRunner().invoke(main, ["scan", "--dataset", str(tmp_path), "--eos-id", "0", "-q"])
    assert result.exit_code == 1 and "--format jsonl|token-stream|txt" in result.output
    assert open_corpus(str(tmp_path), read=ReadOptions(eos_id=0), format="token-stream").description["formats"] == {
        "token-stream": 1
    }


def test_text_formats_merge_and_the_report_counts_each(tmp_path):
    write_texts(tmp_path / "a.jsonl", TEXTS)
    pq.write_table(pa.table({"text": ["more text here", "x"]}), tmp_path / "b.parquet")
    result = scan(str(tmp_path), workers=1, progress=False)
    assert result.histogram.documents_read == len(TEXTS) + 2
    assert "files      2 files: 1 jsonl, 1 parquet (0 empty, 0 ignored)" in result.report()


def test_parquet_text_beside_parquet_token_ids_is_refused(tmp_path):
    pq.write_table(pa.table({"text": ["some text"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"input_ids": [[1, 2, 3]]}), tmp_path / "b.parquet")
    with pytest.raises(
        FreqlabError,
        match=r"a.parquet holds text \('text'\) and .*b.parquet token ids "
        r"\('input_ids'\) found together: their lengths are in different units",
    ):
        open_corpus(str(tmp_path))
    (tmp_path / "a.parquet").rename(tmp_path / "a.jsonl")  # text of another format: the same refusal
    write_texts(tmp_path / "a.jsonl", ["some text"])
    with pytest.raises(FreqlabError, match=r"\(1 jsonl \(text\), 1 parquet \(tokenized\)\)"):
        open_corpus(str(tmp_path))


def test_parquet_is_labelled_by_its_columns_and_refused_before_a_token_stream_asks_for_its_eos(tmp_path):
    """A review: Parquet of token ids beside a .npy token stream was called "parquet (text)" (its unit taken from
    its format before its columns were read); the refusal also comes before the stream's own "needs --eos-id"."""
    pq.write_table(pa.table({"input_ids": [[1, 2, 3], [4, 5]]}), tmp_path / "a.parquet")
    np.save(tmp_path / "b.npy", np.array([1, 2, 3, 0, 4, 5, 0], dtype=np.uint16))
    with pytest.raises(
        FreqlabError,
        match=r"tokenized files of different kinds found together \(1 parquet "
        r"\(tokenized\), 1 token-stream \(tokenized\)\)",
    ):
        open_corpus(str(tmp_path))
    pq.write_table(pa.table({"text": ["some text"]}), tmp_path / "a.parquet")
    with pytest.raises(
        FreqlabError,
        match=r"text and tokenized files found together \(1 parquet \(text\), "
        r"1 token-stream \(tokenized\)\)",
    ):
        open_corpus(str(tmp_path))


def test_an_empty_or_unreadable_parquet_file_is_in_no_unit_and_is_reported_as_what_it_is(tmp_path):
    """A review: a zero-byte or corrupt .parquet (no columns to tell its unit) beside a token stream was called
    "parquet (text)" and refused the folder, even with --on-error skip; beside token-id Parquet, a corrupt one was
    "no text column and no token column". Now an empty file counts zero documents, a corrupt one is the file's own
    "cannot read" error, and with on_error="skip" one unreadable-file skip."""
    np.save(tmp_path / "s.npy", np.array([1, 2, 3, 0, 4, 5, 0], dtype=np.uint16))
    (tmp_path / "a.parquet").write_bytes(b"")
    empty = scan(str(tmp_path), eos_id=0, workers=1, progress=False).histogram
    assert (empty.documents_read, empty.lengths.tolist(), empty.counts.tolist()) == (2, [3, 4], [1, 1])
    (tmp_path / "a.parquet").write_bytes(b"PAR1garbagegarbage")
    with pytest.raises(FreqlabError, match=r"a.parquet: cannot read .*Parquet magic bytes"):
        scan(str(tmp_path), eos_id=0, workers=1, progress=False)
    skipped = scan(str(tmp_path), eos_id=0, workers=1, progress=False, on_error="skip").histogram
    assert (skipped.documents_read, skipped.skipped, skipped.lengths.tolist()) == (3, {"unreadable-file": 1}, [3, 4])
    (tmp_path / "s.npy").unlink()
    pq.write_table(pa.table({"input_ids": [[1, 2, 3], [4, 5]]}), tmp_path / "b.parquet")
    with pytest.raises(FreqlabError, match=r"a.parquet: cannot read .*Parquet magic bytes"):
        scan(str(tmp_path), workers=1, progress=False)
    ids = scan(str(tmp_path), workers=1, progress=False, on_error="skip").histogram
    assert (ids.documents_read, ids.skipped, ids.lengths.tolist()) == (3, {"unreadable-file": 1}, [2, 3])


def test_parquet_files_of_text_and_token_ids_apart_in_file_order_are_named(tmp_path):
    """A review: text and token-id Parquet with another format between them were refused without naming a file."""
    pq.write_table(pa.table({"text": ["some text"]}), tmp_path / "a.parquet")
    np.save(tmp_path / "b.npy", np.array([1, 0], dtype=np.uint16))
    pq.write_table(pa.table({"input_ids": [[1, 2]]}), tmp_path / "c.parquet")
    with pytest.raises(FreqlabError, match=r"parquet files of text \(.*a.parquet\) and of token ids \(.*c.parquet\)"):
        open_corpus(str(tmp_path), eos_id=0)


def test_megatron_files_for_different_vocabularies_or_eos_conventions_are_refused(tmp_path):
    many = LENGTHS * 5  # 20 documents: enough to tell a file's EOS convention from their last tokens
    write_megatron(tmp_path / "a", single_sequence_documents(many), np.uint16)
    write_megatron(tmp_path / "b", single_sequence_documents(many, seed=1), np.uint16)
    assert open_corpus(str(tmp_path)).description["eos"]["appended"] is True  # one convention: fine
    write_megatron(tmp_path / "b", single_sequence_documents(many, seed=1), np.int32)  # a 128K vocabulary
    with pytest.raises(
        FreqlabError,
        match=r"a.idx \(uint16 tokens\) and .*b.idx \(int32 tokens\): tokenized files "
        r"with different vocabularies cannot be counted together",
    ):
        open_corpus(str(tmp_path))
    write_megatron(tmp_path / "b", single_sequence_documents(many, eod=0, seed=1), np.uint16)
    with pytest.raises(
        FreqlabError,
        match=r"a.idx \(EOS 2 appended\) and .*b.idx \(EOS 0 appended\): tokenized "
        r"files with different EOS conventions .* \(told from the last tokens of each file's first documents: if "
        r"they share an EOS, give it with --eos-id\); scan them separately",
    ):
        open_corpus(str(tmp_path))
    with pytest.raises(FreqlabError, match=r"\(EOS 2 appended\) and .*\(no EOS appended\)") as error:
        open_corpus(str(tmp_path), read=ReadOptions(eos_id=2))
    assert "give it with --eos-id" not in str(error.value)  # it was given
    # a file of few documents cannot tell its convention: it agrees with any (a review: three documents that all
    # ended with "." were taken for an EOS, and two files of one datatrove run refused)
    write_megatron(tmp_path / "b", single_sequence_documents([4] * 19, eod=0), np.uint16)
    assert open_corpus(str(tmp_path)).total_documents == len(many) + 19


def test_datatrove_files_of_different_tokenizers_are_refused(tmp_path):
    write_ds(tmp_path / "a.ds", LENGTHS, tokenizer="meta-llama/Llama-2-7b-hf")
    write_ds(tmp_path / "b.ds", LENGTHS, tokenizer="meta-llama/Llama-2-7b-hf")
    assert open_corpus(str(tmp_path)).total_documents == 2 * len(LENGTHS)
    write_ds(tmp_path / "b.ds", LENGTHS, tokenizer="gpt2")
    with pytest.raises(
        FreqlabError,
        match=r"a.ds \(meta-llama/Llama-2-7b-hf\) and .*b.ds \(gpt2\): tokenized files with different tokenizers",
    ):
        open_corpus(str(tmp_path))
    # a review: a file without NAME.ds.metadata (the same uint16 tokens) was "a different vocabulary"
    write_ds(tmp_path / "b.ds", LENGTHS)
    os.remove(tmp_path / "b.ds.metadata")
    assert open_corpus(str(tmp_path)).total_documents == 2 * len(LENGTHS)


def test_the_corpus_eos_convention_is_that_of_the_files_that_tell_one(tmp_path):
    """A second review: 30 documents ending with EOS 2 beside a file of 19 ending with 0 (too few to tell its own)
    were pooled into "no EOS appended"."""
    write_ds(tmp_path / "a.ds", [5] * 30, eos=2)
    write_ds(tmp_path / "b.ds", [5] * 19, eos=0)
    eos = open_corpus(str(tmp_path)).description["eos"]
    assert (eos["appended"], eos["eos_id"], eos["documents_checked"]) == (True, 2, 30)
    assert eos["files_too_few_documents"] == 1


def test_a_file_passed_over_is_counted_once_however_often_a_pattern_meets_it(tmp_path):
    """A review: 'g/**' matches g/notes.md and the folder g, whose walk meets it again ("2 ignored: notes.md,
    notes.md"); a symlink loop met it at every depth (84 ignored for 2 files)."""
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"text": "a b"}\n', encoding="utf-8")
    (folder / "notes.md").write_text("x\n", encoding="utf-8")
    (folder / "loop").symlink_to(folder)
    result = scan(str(folder / "**"), progress=False, workers=1)
    assert result.summary["corpus"]["description"]["ignored_files"] == 1
    assert result.histogram.documents == 1 and "1 ignored: notes.md," in result.report()
