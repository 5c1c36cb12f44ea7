"""``scan(corpus)`` of a corpus opened by ``open_corpus`` is the keyword form's scan: the same histogram, the same
summary.json, the same fingerprint, so each resumes from the other's checkpoints; reader options live on
``open_corpus`` alone (beside an opened corpus they are a TypeError naming them)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from freqlab.corpus import ReadOptions, open_corpus
from freqlab.histogram import LengthHistogram
from freqlab.scan import ScanSettings, scan
from freqlab.scan.settings import READER_OPTIONS

from .conftest import assert_same_histogram, scan_slimpajama
from .test_resume import Crash, crash_after

TIMINGS = ("wall_seconds", "documents_per_second", "tokens_per_second")  # the only numbers that differ run to run


def comparable(summary: dict) -> dict:
    """The summary less its timings and the paths it was written to (two output folders)."""
    rest = {k: v for k, v in summary.items() if k != "outputs"}
    return {**rest, "scan": {k: v for k, v in summary["scan"].items() if k not in TIMINGS}}


def opened_slimpajama(folder):
    """What ``scan_slimpajama`` reads, opened first: the preset's field mapping (text, RedPajama set name)."""
    return open_corpus("slimpajama", data_files=str(folder / "*.jsonl"))


def scan_opened(corpus, **options):
    options.setdefault("L", [512])
    return scan(corpus, regimes=["natural"], progress=False, **options)


def manifest(out) -> dict:
    return json.loads((out / "checkpoints" / "manifest.json").read_text())


def test_an_opened_corpus_scans_like_the_keyword_form(tmp_path, slimpajama_dir):
    named = scan_slimpajama(slimpajama_dir, out=tmp_path / "named", workers=1)
    opened = scan_opened(opened_slimpajama(slimpajama_dir), out=tmp_path / "opened", workers=1)
    assert sorted(opened.histogram.sources) == ["RedPajamaBook", "RedPajamaGithub", "RedPajamaStackExchange"]
    assert_same_histogram(opened.histogram, named.histogram)
    assert comparable(opened.summary) == comparable(named.summary)
    written = [json.loads((tmp_path / name / "summary.json").read_text()) for name in ("named", "opened")]
    assert comparable(written[0]) == comparable(written[1])
    assert manifest(tmp_path / "opened") == manifest(tmp_path / "named")  # the fingerprint and its hash


def test_the_fingerprint_of_tokenized_data_carries_the_read_options_of_the_opened_corpus(tmp_path):
    pl.DataFrame({"input_ids": [[1, 2, 3], [4], [], [5, 6]], "n": [3, 1, 0, 7]}).write_parquet(tmp_path / "t.parquet")
    path = str(tmp_path / "t.parquet")
    named = ScanSettings(path, length_field="n")
    opened = ScanSettings(open_corpus(path, read=ReadOptions(length_field="n")))
    fingerprints = [s.fingerprint(s.open_corpus(), None) for s in (named, opened)]
    assert fingerprints[0] == fingerprints[1]
    assert fingerprints[1]["read_options"] == {"length_field": "n"}  # the lengths column, not the token lists
    assert ScanSettings(path).fingerprint(ScanSettings(path).open_corpus(), None) != fingerprints[0]
    result = scan(open_corpus(path, read=ReadOptions(length_field="n")), L=[8], progress=False, workers=1)
    assert result.histogram.lengths.tolist() == [1, 3, 7] and result.histogram.empty_documents == 1


@pytest.mark.parametrize("first", ["opened", "named"])
def test_a_crashed_scan_resumes_in_the_other_form_to_the_identical_result(tmp_path, slimpajama_dir, monkeypatch, first):
    full = scan_slimpajama(slimpajama_dir, workers=1)
    forms = {
        "opened": lambda **o: scan_opened(opened_slimpajama(slimpajama_dir), workers=1, **o),
        "named": lambda **o: scan_slimpajama(slimpajama_dir, workers=1, **o),
    }
    then = forms["named" if first == "opened" else "opened"]
    out = tmp_path / "out"
    crash_after(monkeypatch, 2)
    with pytest.raises(Crash):
        forms[first](out=out)
    monkeypatch.undo()
    started = crash_after(monkeypatch, 10)  # count the shards the resumed scan runs
    resumed = then(out=out, resume=True)
    assert started == ["chunk_2.jsonl"]  # the other form's two checkpoints were used: same fingerprint
    assert resumed.summary["scan"]["resumed_shards"] == 2
    assert_same_histogram(resumed.histogram, full.histogram)
    assert_same_histogram(LengthHistogram.read_parquet(out / "lengths.parquet"), full.histogram)
    summary = json.loads((out / "summary.json").read_text())
    assert {k: summary[k] for k in ("corpus", "documents", "tokens", "lengths", "windows")} == {
        k: full.summary[k] for k in ("corpus", "documents", "tokens", "lengths", "windows")
    }


def test_reader_options_beside_an_opened_corpus_are_a_type_error_naming_them(slimpajama_dir):
    corpus = opened_slimpajama(slimpajama_dir)
    with pytest.raises(TypeError) as error:
        scan(corpus, text_field="body", split="validation", eos_id=2, max_docs=3, progress=False)
    assert str(error.value) == (
        "split, text_field, eos_id: reader options go to open_corpus(...), not beside an opened corpus"
    )
    for name in READER_OPTIONS:  # each one alone, named
        value = "validation" if name == "split" else 2 if name == "eos_id" else "x"
        with pytest.raises(TypeError, match=rf"^{name}: reader options go to open_corpus"):
            ScanSettings(corpus, **{name: value})
    with pytest.raises(TypeError, match="either dataset or an opened corpus"):
        ScanSettings("slimpajama", corpus=corpus)
    with pytest.raises(TypeError, match="give the opened corpus once"):
        ScanSettings(corpus, corpus=corpus)
    # what is not a reader option goes with it as usual; the default split given explicitly is no conflict
    settings = ScanSettings(corpus, split="train", max_docs=3, sample_rate=0.5)
    assert (settings.corpus, settings.dataset, settings.max_docs, settings.open_corpus()) == (corpus, None, 3, corpus)


def test_every_reader_option_the_type_error_sends_to_open_corpus_is_taken_there(tmp_path):
    # the TypeError says "reader options go to open_corpus(...)": each of them is an open_corpus keyword
    import inspect

    assert set(READER_OPTIONS) <= set(inspect.signature(open_corpus).parameters)
    pl.DataFrame({"input_ids": [[1, 2, 3], [4], [], [5, 6]], "n": [3, 1, 0, 7]}).write_parquet(tmp_path / "t.parquet")
    path = str(tmp_path / "t.parquet")
    one_by_one = ScanSettings(open_corpus(path, length_field="n"))
    as_read = ScanSettings(open_corpus(path, read=ReadOptions(length_field="n")))
    assert one_by_one.fingerprint(one_by_one.open_corpus(), None) == as_read.fingerprint(as_read.open_corpus(), None)
    result = scan(open_corpus(path, tokens_field="input_ids"), L=[8], progress=False, workers=1)
    assert result.histogram.lengths.tolist() == [1, 2, 3] and result.histogram.empty_documents == 1
    with pytest.raises(TypeError, match=r"read=ReadOptions\(...\) or tokens_field/length_field/eos_id, not both"):
        open_corpus(path, read=ReadOptions(length_field="n"), eos_id=2)


def test_a_list_of_paths_opens_as_local_files_as_scan_reads_it(tmp_path):
    for k, lengths in enumerate([[1, 2], [3]]):
        pl.DataFrame({"n": lengths}).write_parquet(tmp_path / f"{k}.parquet")
    paths = [str(tmp_path / "0.parquet"), str(tmp_path / "1.parquet")]
    opened = scan(open_corpus(paths, length_field="n"), L=[8], progress=False, workers=1)
    named = scan(paths, length_field="n", L=[8], progress=False, workers=1)
    assert opened.histogram.lengths.tolist() == named.histogram.lengths.tolist() == [1, 2, 3]
