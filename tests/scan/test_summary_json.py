"""The scan report says what was counted: special tokens only when the tokenizer adds some."""

from __future__ import annotations

import json
import threading
from collections import Counter

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from freqlab.scan import scan

VOCAB = {"[UNK]": 0, "<s>": 1, "</s>": 2, "a": 3, "b": 4}


@pytest.mark.parametrize(
    ("post_processor", "added", "note"),
    [
        (False, 0, "--add-special-tokens: none added (the tokenizer has no post-processor adding any)"),
        (True, 2, "special tokens counted: 2 per document"),
    ],
)
def test_add_special_tokens_says_how_many_were_added(tmp_path, post_processor, added, note):
    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    if post_processor:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)]
        )
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["a b a", "b"]), encoding="utf-8")
    result = scan(
        str(data), tokenizer=str(tmp_path / "tokenizer.json"), add_special_tokens=True, workers=1, progress=False
    )
    assert result.histogram.tokens == 4 + 2 * added  # "a b a" and "b", plus <s> and </s> each when added
    assert result.summary["tokenizer"]["special_tokens_added"] == added
    assert note in result.report()
    assert "special tokens counted" not in result.report() or added


def test_a_tokenizer_cache_that_cannot_be_written_is_in_the_report(tmp_path, monkeypatch):
    """Each scan would load and check the tokenizer again, unseen: the summary names the folder and the reason;
    a later scan whose tokenizer's load was kept (another file, or the same through a writable folder, in the same
    process) says nothing of it, nor one with the cache off."""
    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    tokenizer.add_tokens(["c"])
    tokenizer.save(str(tmp_path / "other.json"))
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a b a"}\n', encoding="utf-8")
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.delenv("FREQLAB_NO_CACHE")
    monkeypatch.setenv("FREQLAB_CACHE_DIR", str(tmp_path / "a-file"))
    result = scan(str(data), tokenizer=str(tmp_path / "tokenizer.json"), workers=1, progress=False)
    reason = f"{tmp_path / 'a-file' / 'tokenizers'}: Not a directory"
    assert result.histogram.tokens == 3 and result.summary["tokenizer"]["cache_not_written"] == reason
    assert f"tokenizer cache not written ({reason}): each run loads and checks the tokenizer again" in result.report()
    monkeypatch.setenv("FREQLAB_CACHE_DIR", str(tmp_path / "a-folder"))
    again = scan(str(data), tokenizer=str(tmp_path / "other.json"), workers=1, progress=False)
    assert again.summary["tokenizer"]["cache_not_written"] is None and "cache not written" not in again.report()
    assert len(list((tmp_path / "a-folder" / "tokenizers").glob("*.pickle"))) == 1
    # the first file again, through the writable folder: loaded again (the process remembers counters by folder)
    kept = scan(str(data), tokenizer=str(tmp_path / "tokenizer.json"), workers=1, progress=False)
    assert kept.summary["tokenizer"]["cache_not_written"] is None
    assert len(list((tmp_path / "a-folder" / "tokenizers").glob("*.pickle"))) == 2
    monkeypatch.setenv("FREQLAB_CACHE_DIR", str(tmp_path / "a-file"))
    monkeypatch.setenv("FREQLAB_NO_CACHE", "1")
    off = scan(str(data), tokenizer=str(tmp_path / "tokenizer.json"), workers=1, progress=False)
    assert off.summary["tokenizer"]["cache_not_written"] is None


def test_blank_lines_of_a_scan_stopped_at_a_limit_are_those_before_the_last_document_kept(tmp_path):
    """A limit cuts documents; the blank lines kept are those before the last document kept, whatever the batch
    size, the workers, and a resume from checkpoints (they counted as far as each reader went: a review saw a run
    and its resume disagree, 4 and 5); a whole scan's are all of them, those after its last document too."""
    data = tmp_path / "d"
    data.mkdir()
    # file a: doc, 1 blank, doc, 2 blank, ... (k blank lines after its k-th document); file b: 3 blank lines first
    (data / "a.jsonl").write_text("".join(json.dumps({"text": "a b"}) + "\n" + "\n" * k for k in range(1, 7)))
    (data / "b.jsonl").write_text("\n\n\n" + "".join(json.dumps({"text": "c"}) + "\n\n" for _ in range(4)))
    whole = scan(str(data), tokenizer="tekken", workers=1, progress=False)
    assert whole.summary["documents"]["blank_lines"] == 21 + 3 + 4 and "28 blank lines passed over" in whole.report()
    # the first n documents: the blank lines before the n-th (a's k-th after its k-th document; b's 3 before its first)
    expected = {1: 0, 2: 1, 3: 3, 6: 15, 7: 21 + 3, 8: 21 + 3 + 1}
    for max_docs, blank in expected.items():
        for workers, batch_size in ((1, 1), (1, 64), (2, 2)):
            options = {"tokenizer": "tekken", "workers": workers, "batch_size": batch_size, "progress": False}
            capped = scan(str(data), max_docs=max_docs, **options)
            assert capped.summary["documents"]["blank_lines"] == blank, (max_docs, workers, batch_size)
    out = tmp_path / "o"
    first = scan(str(data), max_docs=7, workers=2, out=str(out), tokenizer="tekken", progress=False)
    again = scan(str(data), max_docs=7, workers=2, out=str(out), resume=True, tokenizer="tekken", progress=False)
    assert first.summary["documents"] == again.summary["documents"] and again.summary["scan"]["resumed_shards"] == 2
    assert "24 blank lines passed over (not records)" in again.report()


def test_the_warm_up_loads_every_kernel_the_summary_of_its_regimes_calls():
    """What a scan's driver loads while its shards are counted (``freqlab.scan.summary_json.warm_up``): afterwards the
    summary of a real histogram, in larger windows, compiles or loads no kernel of its own (a fresh process)."""
    code = """
import json, sys
import numpy as np
from freqlab.jit import LazyKernel
from freqlab.scan.settings import ReportOptions
from freqlab.scan.summary_json import budget_and_windows, warm_up
from freqlab.histogram import LengthHistogram

def loaded():
    kernels = {id(v): v for m in list(sys.modules.values()) if m and m.__name__.startswith("freqlab")
               for v in vars(m).values() if isinstance(v, LazyKernel)}
    return {k.__qualname__: sorted(map(str, k._dispatcher.signatures)) for k in kernels.values() if k._dispatcher}

regimes = ["natural", "truncate", "concat", "uniform", "pack", "best-fit"]
report = ReportOptions(L=(2048, 4096), regimes=regimes)
warm_up(report, seed=7)
before = loaded()
lengths = np.random.default_rng(0).integers(1, 20_000, 3_000)
h = LengthHistogram.from_lengths(lengths)
budget_and_windows(h, report.L, regimes, seed=7)
print(json.dumps({"before": before, "after": loaded()}))
"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["before"] and seen["after"] == seen["before"]


def test_a_scan_loads_the_summary_on_a_thread_joined_before_it_returns(tmp_path, monkeypatch):
    import threading

    from freqlab.scan import driver

    calls = []
    monkeypatch.setattr(driver, "warm_summary", lambda report, seed: calls.append((report.L, report.regimes, seed)))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"text": "a b " * k}) + "\n" for k in range(1, 30)), encoding="utf-8")
    result = scan(str(data), L=[64, 128], regimes=["natural", "pack"], seed=5, workers=1, progress=False)
    assert calls == [((64, 128), ("natural", "pack"), 5)]
    assert not any(t.name == "freqlab-warm-up" for t in threading.enumerate())
    assert result.histogram.documents == 29


def test_a_failing_warm_up_changes_nothing(tmp_path, monkeypatch):
    from freqlab.scan import driver

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"text": "a b " * k}) + "\n" for k in range(1, 30)), encoding="utf-8")
    expected = scan(str(data), L=[64], workers=1, progress=False).summary["windows"]

    def fail(report, seed):
        raise RuntimeError("no numba here")

    monkeypatch.setattr(driver, "warm_summary", fail)
    assert scan(str(data), L=[64], workers=1, progress=False).summary["windows"] == expected


def test_a_failed_scan_leaves_no_warm_up_thread_running(tmp_path, monkeypatch):
    """A fork right after a failed scan copied numba's compiler lock, held by the warm-up, into the child: the child's
    first kernel then waited for ever. The thread is joined however the count ends."""
    import threading
    import time

    from freqlab.errors import FreqlabError
    from freqlab.scan import driver

    monkeypatch.setattr(driver, "warm_summary", lambda report, seed: time.sleep(0.5))
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a b"}\n{not json\n', encoding="utf-8")
    with pytest.raises(FreqlabError, match=r"d\.jsonl:2"):
        scan(str(data), workers=1, progress=False)
    assert not any(t.name == "freqlab-warm-up" for t in threading.enumerate())


def test_the_report_shows_names_from_the_data_and_the_command_line_without_obeying_them(tmp_path):
    # a source label or a tokenizer path holding ESC or CR drove the terminal (colours, overwritten lines)
    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = tmp_path / "tok\x1b[31m"
    folder.mkdir()
    tokenizer.save(str(folder / "tokenizer.json"))
    data = tmp_path / "d.jsonl"
    records = [("a b a", "red\x1b[31m"), ("b", "over\rwritten"), ("a", "plain")]
    data.write_text("".join(json.dumps({"text": t, "meta": {"src": s}}) + "\n" for t, s in records), encoding="utf-8")
    result = scan(
        str(data), tokenizer=str(folder / "tokenizer.json"), source_field="meta.src", workers=1, progress=False
    )
    for report in (result.report(), result.histogram.report(2048)):
        assert "\x1b" not in report and "\r" not in report
    table = [line for line in result.report().splitlines() if line.startswith(("source", "red", "over", "plain"))]
    assert table[1:] == [
        "over\\rwritten             1                 1   20.0%",
        "plain                     1                 1   20.0%",
        "red\\x1b[31m               1                 3   60.0%",
    ]
    assert "tok\\x1b[31m/tokenizer.json" in result.report()
    assert "source red\\x1b[31m" in result.histogram.report(2048)
    window = [line for line in result.report().splitlines() if line.startswith("L=2048 natural")]
    following = result.report().splitlines()[result.report().splitlines().index(window[0]) + 1]
    assert "\\n" not in window[0] and following.startswith("    50% of mass at i ≤ ")  # a window's two lines stay two


def test_the_documents_each_backend_counted_are_in_the_summary_and_the_report(tmp_path):
    """Documents holding ſ skip fastokens for tiktoken, those holding an added token matched on normalized text go
    to the reference: the summary says how many went where, the same for one worker and two, and after a resume
    from checkpoints; the report names them when any went past the first backend."""
    from tokenizers import AddedToken

    from freqlab.tokenization import load_tokenizer
    from freqlab.tokenization.backends import LLAMA3_PATTERN

    from ..tokenization.test_presets import llama3_style
    from ..tokenization.textsource import stdlib_documents

    tokenizer = llama3_style(LLAMA3_PATTERN, stdlib_documents(2, 40, max_chars=1000), vocab_size=600)
    tokenizer.add_tokens([AddedToken("<|note|>", normalized=True)])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    counter = load_tokenizer(str(tmp_path / "tokenizer.json"))
    assert counter.backends == ("fastokens", "tiktoken", "hf-tokenizers")
    plain = [text for text in stdlib_documents(3, 60, max_chars=500) if "ſ" not in text and "<|" not in text]
    texts = [*plain, *(f"it'ſ {k}" for k in range(7)), *(f"x <|note|> {k}" for k in range(5)), ""]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for part in range(3):
        (corpus / f"{part}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[part::3]))
    expected = {"fastokens": len(plain), "tiktoken": 7, "hf-tokenizers": 5}
    one = scan(str(corpus), tokenizer=counter, workers=1, batch_size=4, progress=False, out=str(tmp_path / "o1"))
    two = scan(str(corpus), tokenizer=counter, workers=2, batch_size=4, progress=False)
    again = scan(str(corpus), tokenizer=counter, workers=1, progress=False, out=str(tmp_path / "o1"), resume=True)
    for result in (one, two, again):
        assert result.summary["tokenizer"]["counted_by"] == expected
        assert (
            sum(expected.values())
            == result.summary["documents"]["tokenized"] + result.summary["documents"]["empty"] - 1
        )
    assert again.summary["scan"]["resumed_shards"] == 3 and two.summary["scan"]["workers"] == 2, two.summary["scan"]
    assert f"documents counted by fastokens {len(plain):,}; tiktoken 7; hf-tokenizers 5" in one.report()

    # resumed by a counter without fastokens: the checkpoints' fastokens documents are still there, listed after
    next(iter((tmp_path / "o1" / "checkpoints").glob("0.jsonl*"))).unlink()
    lacking = scan(
        str(corpus), tokenizer=counter.without("fastokens", "a test"), workers=1, out=str(tmp_path / "o1"), resume=True
    )
    assert lacking.summary["scan"]["resumed_shards"] == 2
    assert sum(lacking.summary["tokenizer"]["counted_by"].values()) == sum(expected.values())
    assert list(lacking.summary["tokenizer"]["counted_by"])[-1] == "fastokens"

    # another thread counting on the same counter meanwhile (a notebook): the scan reports its own documents only
    done = threading.Event()

    def busy() -> None:
        while not done.is_set():
            counter.count(["it'ſ again", "x <|note|> y", "plain words"])

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        meanwhile = scan(str(corpus), tokenizer=counter, workers=1, batch_size=4, progress=False)
    finally:
        done.set()
        thread.join()
    assert meanwhile.summary["tokenizer"]["counted_by"] == expected

    class Plus100:
        """A caller's wrapper (100 more tokens a document) that forwards the rest to the counter."""

        def __getattr__(self, name):
            return getattr(counter, name)

        def count(self, texts):
            return counter.count(texts) + 100

    wrapped = scan(str(corpus), tokenizer=Plus100(), workers=1, progress=False)
    assert wrapped.histogram.tokens == one.histogram.tokens + 100 * sum(expected.values())  # its own count()
    assert wrapped.summary["tokenizer"]["counted_by"] == expected  # the TokenCounter's backends, inside it


def test_documents_per_backend_under_a_limit_are_those_of_the_documents_kept(tmp_path):
    """A limit that cuts a batch (in the shard, or later in the ledger, from a worker's log or a checkpoint's) keeps
    the backends of the documents it keeps: the summary's counts add up to the documents handed to the tokenizer
    (all tokenized here: none is whitespace a tokenizer makes nothing of), and are those
    of the first documents of the corpus, whatever was read beyond the limit."""
    from tokenizers import AddedToken

    from freqlab.tokenization import load_tokenizer
    from freqlab.tokenization.backends import LLAMA3_PATTERN

    from ..tokenization.test_presets import llama3_style
    from ..tokenization.textsource import stdlib_documents

    tokenizer = llama3_style(LLAMA3_PATTERN, stdlib_documents(2, 40, max_chars=1000), vocab_size=600)
    tokenizer.add_tokens([AddedToken("<|note|>", normalized=True)])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    counter = load_tokenizer(str(tmp_path / "tokenizer.json"))
    plain = [text for text in stdlib_documents(3, 40, max_chars=300) if "ſ" not in text and "<|" not in text]
    kinds = ["fastokens", "tiktoken", "hf-tokenizers", None] * 10  # None: an empty document
    texts = [
        {"fastokens": plain[k], "tiktoken": f"it'ſ {k}", "hf-tokenizers": f"x <|note|> {k}", None: ""}[kind]
        for k, kind in enumerate(kinds)
    ]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for part in range(2):  # 20 documents a file, in order
        (corpus / f"{part}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[20 * part :][:20]))

    def expected(n: int) -> dict:
        return {k: v for k, v in Counter(kind for kind in kinds[:n] if kind).items()}

    options = {"tokenizer": counter, "batch_size": 64, "progress": False}
    for max_docs in (3, 6, 27):
        for workers in (1, 2):
            result = scan(str(corpus), max_docs=max_docs, workers=workers, **options)
            assert result.summary["tokenizer"]["counted_by"] == expected(max_docs), (max_docs, workers)
            assert sum(expected(max_docs).values()) == result.summary["documents"]["tokenized"]
    # a cut by tokens: as many documents as the first ones reaching the limit
    lengths = counter.count(texts)
    limit = int(np.cumsum(lengths)[24])
    assert scan(str(corpus), max_tokens=limit, **options).summary["tokenizer"]["counted_by"] == expected(25)

    # resumed from checkpoints (each holding its documents' backends), cut again in the same place
    first = scan(str(corpus), max_docs=27, workers=2, out=str(tmp_path / "o"), **options)
    again = scan(str(corpus), max_docs=27, workers=2, out=str(tmp_path / "o"), resume=True, **options)
    assert again.summary["scan"]["resumed_shards"] == 2, again.summary["scan"]
    assert first.summary["tokenizer"]["counted_by"] == again.summary["tokenizer"]["counted_by"] == expected(27)


def test_a_checkpoint_of_version_2_is_resumed_with_its_documents_per_backend_unknown(tmp_path):
    """Version 2 kept no counted_by: its partial is used (a long scan's progress is not lost to an upgrade) and the
    summary says the counts per backend are unknown (None), where a sum without it would be short."""
    import polars as pl

    from freqlab.files import write_parquet
    from freqlab.scan import checkpoint

    data = tmp_path / "corpus"
    data.mkdir()
    for part in range(2):
        (data / f"{part}.jsonl").write_text("".join(json.dumps({"text": "a b " * (k + 1)}) + "\n" for k in range(5)))
    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    options = {"tokenizer": str(tmp_path / "tokenizer.json"), "workers": 1, "progress": False}
    first = scan(str(data), out=str(tmp_path / "o"), **options)
    assert first.summary["tokenizer"]["counted_by"] == {"hf-tokenizers": 10}
    path = next((tmp_path / "o" / "checkpoints").glob("0.jsonl*"))
    frame, header = pl.read_parquet(path), checkpoint._read_header(path)
    header = {k: v for k, v in header.items() if k not in ("counted_by", "checksum")} | {"version": 2}
    write_parquet(path, frame, {**header, "checksum": checkpoint._checksum(frame, header)})
    resumed = scan(str(data), out=str(tmp_path / "o"), resume=True, **options)
    assert resumed.summary["scan"]["resumed_shards"] == 2 and resumed.histogram.tokens == first.histogram.tokens == 60
    assert resumed.summary["tokenizer"]["counted_by"] is None and "counted by" not in resumed.report()


def test_the_seed_of_the_pack_order_and_the_sample_is_in_the_summary(tmp_path):
    """A review: `scan --regime pack --seed 3` wrote a pack row no later command could reproduce, the seed in no file;
    it is the summary's, and freq given it reproduces the row."""
    from freqlab import LengthHistogram

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"text": "word " * (37 * k % 301 + 1)}) + "\n" for k in range(200)))
    result = scan(str(data), seed=3, L=[64], regimes=["pack"], tokenizer="tekken", progress=False, workers=1)
    assert result.summary["scan"]["seed"] == 3
    (row,) = result.summary["windows"]
    again = LengthHistogram.from_counts(result.histogram.lengths, result.histogram.counts).frequency(64, "pack", seed=3)
    assert row["share_at_most_half"] == again.share_at_most(32)
