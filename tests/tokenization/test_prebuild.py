"""Start-up paid once: the cache entry names the tokenizer before it loads (:func:`cache_entry`), keeps its sources'
digests, and a forkserver that built it (:mod:`freqlab.tokenization.prebuild`) hands the built engines to every
worker it forks; only a counter of the very same data uses them, and an edited file is verified again."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import threading

import pytest

from freqlab import fastokens_ahead
from freqlab.tokenization import cache as cache_module
from freqlab.tokenization import counter as counter_module
from freqlab.tokenization import load_tokenizer
from freqlab.tokenization import verify as verify_module
from freqlab.tokenization.counter import sources_fingerprint
from freqlab.tokenization.load import cache_entry
from freqlab.tokenization.prebuild import prebuild

from .test_cache import TEXTS, comparisons, expected


def test_cache_entry_names_the_entry_a_load_reads_and_nothing_before_it(tokenizer_json, cache_on, tmp_path):
    path, _ = tokenizer_json
    assert cache_entry(str(path)) is None  # never loaded
    load_tokenizer(str(path))
    (entry,) = cache_on.glob("*.pickle")
    assert cache_entry(str(path)) == entry
    assert cache_entry(str(path), add_special_tokens=True) is None  # other options, other entry
    assert cache_entry("org/never-cached") is None and cache_entry(str(tmp_path / "missing.json")) is None


def test_an_edited_file_has_no_entry_and_is_verified_again(tokenizer_json, cache_on, monkeypatch, tmp_path):
    path, reference = tokenizer_json
    load_tokenizer(str(path))
    edited = tmp_path / "tokenizer.json"  # same size, same name, other bytes: the key is the content's sha256
    text = path.read_text(encoding="utf-8")
    assert "\n  " in text
    edited.write_text(text.replace("\n  ", "  \n", 1), encoding="utf-8")
    assert edited.stat().st_size == path.stat().st_size
    assert cache_entry(str(edited)) is None
    compared = comparisons(monkeypatch)
    counter = load_tokenizer(str(edited))
    assert compared == ["tiktoken", "fastokens"] and counter.count(TEXTS).tolist() == expected(reference, TEXTS)


def test_a_hit_does_not_hash_the_sources_again_and_keeps_the_same_fingerprint(tokenizer_json, cache_on, monkeypatch):
    path, _ = tokenizer_json
    first = load_tokenizer(str(path))
    hashed = []
    real = counter_module.source_digest
    monkeypatch.setattr(counter_module, "source_digest", lambda data: hashed.append(data) or real(data))
    monkeypatch.setattr(verify_module, "_VERIFIED", {})  # a new process
    second = load_tokenizer(str(path))
    assert cache_module.STATS["hits"] == 1
    assert second.fingerprint == first.fingerprint
    assert pickle.loads(pickle.dumps(second)).fingerprint == first.fingerprint
    assert hashed == []
    assert second.fingerprint == sources_fingerprint({b: second.source(b) for b in second.backends}, second.routed)
    assert len(hashed) == len(second.backends)  # from scratch: every source hashed, the same fingerprint


def test_the_cache_writes_the_fastokens_input_beside_an_entry_that_verified_fastokens(tokenizer_json, cache_on):
    """``<entry>.fastokens`` (private, as the entry) holds the source verified; the entry records its identity; a hit
    writes it again when it is gone, cut short or another entry's, and leaves a good one alone."""
    path, _ = tokenizer_json
    counter = load_tokenizer(str(path))
    entry = cache_entry(str(path))
    header, body = fastokens_ahead.read_input(entry)
    assert body == counter.source("fastokens").encode()
    assert cache_module.read_entry(entry)["fastokens_input"] == header["identity"]
    sidecar = fastokens_ahead.input_path(entry)
    assert oct(sidecar.stat().st_mode & 0o777) == oct(entry.stat().st_mode & 0o777) == "0o600"
    good = sidecar.read_bytes()
    for broken in (None, good[:-10], fastokens_ahead.input_file("json", "{}")):
        if broken is None:
            sidecar.unlink()
        else:
            sidecar.write_bytes(broken)
        assert load_tokenizer(str(path)).backend == "fastokens"  # a hit
        assert sidecar.read_bytes() == good
    before = sidecar.stat().st_mtime_ns
    load_tokenizer(str(path))
    assert sidecar.stat().st_mtime_ns == before and cache_module.STATS["hits"] == 4
    # its body edited, its header whole: the hit's repair reads the header alone, so the file stayed damaged and
    # every forkserver built nothing ahead (a review); the forkserver's read removes it, the next hit writes it again
    line_end = good.index(b"\n") + 1
    sidecar.write_bytes(good[:line_end] + good[line_end:].replace(b"{", b"[", 1))
    assert fastokens_ahead.read_input(entry) is None and not sidecar.exists()
    load_tokenizer(str(path))
    assert sidecar.read_bytes() == good


def test_a_fifo_in_place_of_the_entry_or_its_input_never_blocks_a_load(tokenizer_json, cache_on):
    """Both are opened without blocking and read only when regular; a write replaces the FIFO, never writes into it."""
    path, _ = tokenizer_json
    load_tokenizer(str(path))
    entry = cache_entry(str(path))
    for fifo in (entry, fastokens_ahead.input_path(entry)):
        fifo.unlink()
        os.mkfifo(fifo)
        loading = threading.Thread(target=load_tokenizer, args=(str(path),), daemon=True)
        loading.start()
        loading.join(timeout=60)
        assert not loading.is_alive() and fifo.is_file()  # replaced by a regular file
    assert fastokens_ahead.read_input(entry) is not None and cache_module.read_entry(entry) is not None


def test_an_entry_copied_or_linked_under_another_key_is_not_read(tokenizer_json, cache_on, tmp_path):
    """An entry records its key: another tokenizer's entry put in its place (a copy, a link) is a miss, not a swap."""
    path, reference = tokenizer_json
    load_tokenizer(str(path))
    entry = cache_entry(str(path))
    other = tmp_path / "other.json"
    other.write_text(path.read_text(encoding="utf-8").replace('"dropout": null', '"dropout": null ', 1))
    assert load_tokenizer(str(other)).count(TEXTS).tolist() == expected(reference, TEXTS)
    foreign = cache_entry(str(other))
    assert foreign is not None and foreign != entry
    foreign.unlink()
    foreign.symlink_to(entry)
    assert cache_module.read_entry(foreign) is None and cache_module.read_entry(entry) is not None


def test_nothing_is_written_beside_an_entry_that_refused_fastokens(tokenizer_json, cache_on):
    path, _ = tokenizer_json
    with verify_module.skipping({"fastokens": "left out here"}):
        assert load_tokenizer(str(path)).backend == "tiktoken"
    assert list(cache_on.glob("*.fastokens")) == [] and len(list(cache_on.glob("*.pickle"))) == 1
    assert cache_module.read_entry(next(cache_on.glob("*.pickle")))["fastokens_input"] is None


def test_prebuild_takes_fastokens_built_ahead_only_from_the_input_the_entry_verified(
    tokenizer_json, cache_on, monkeypatch
):
    path, reference = tokenizer_json
    load_tokenizer(str(path))
    entry = cache_entry(str(path))
    good = fastokens_ahead.input_path(entry).read_bytes()
    for foreign in (False, True):
        monkeypatch.setattr(counter_module, "_BUILT", {})  # a fresh forkserver
        monkeypatch.setattr(fastokens_ahead, "_BUILT", {})
        if foreign:  # a whole, valid file of another tokenizer: built, never taken
            other = json.loads(reference.to_str())
            other["model"]["vocab"] = dict(list(other["model"]["vocab"].items()))
            other["added_tokens"] = []
            fastokens_ahead.input_path(entry).write_bytes(fastokens_ahead.input_file("json", json.dumps(other)))
        thread = fastokens_ahead.start_building(fastokens_ahead._build_from, str(entry))
        monkeypatch.setattr(fastokens_ahead, "_BUILDING", thread)
        built = prebuild(entry)
        (ahead,) = fastokens_ahead._BUILT.values()
        assert (built.built("fastokens").tokenizer is ahead) is not foreign
        assert built.count(TEXTS).tolist() == expected(reference, TEXTS)
    fastokens_ahead.input_path(entry).write_bytes(good)


def test_prebuild_builds_the_verified_fast_backend_once_for_counters_of_the_same_data(
    tokenizer_json, cache_on, monkeypatch
):
    path, reference = tokenizer_json
    load_tokenizer(str(path))
    monkeypatch.setattr(counter_module, "_BUILT", {})  # a fresh forkserver
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    compared = comparisons(monkeypatch)
    built = prebuild(cache_entry(str(path)))
    assert compared == [] and built.backend == "fastokens" and built.is_built("fastokens")
    driver = load_tokenizer(str(path))  # the driver: a cache hit, nothing built
    assert not driver.is_built() and driver.backend == "fastokens"
    worker = pickle.loads(pickle.dumps(driver))  # what a forked worker unpickles
    assert worker.is_built("fastokens") and worker._engines.get("fastokens") is built._engines.get("fastokens")
    assert worker.count(TEXTS).tolist() == expected(reference, TEXTS)
    other = load_tokenizer(str(path), add_special_tokens=True)  # other data (+ special tokens): not shared
    assert other.fingerprint == driver.fingerprint or not pickle.loads(pickle.dumps(other)).is_built("fastokens")


def test_prebuild_builds_nothing_from_an_entry_without_a_fastokens_verdict_or_a_damaged_one(
    tokenizer_json, cache_on, monkeypatch
):
    path, _ = tokenizer_json
    load_tokenizer(str(path), fastokens_rule=lambda backend: "small scan")  # fastokens never verified
    monkeypatch.setattr(counter_module, "_BUILT", {})
    entry = cache_entry(str(path))
    assert prebuild(entry) is None and counter_module._BUILT == {}
    entry.write_bytes(entry.read_bytes()[:100])
    assert prebuild(entry) is None and counter_module._BUILT == {}


def test_engines_build_runs_the_builds_side_by_side_joins_its_threads_and_raises_a_failure(monkeypatch):
    """Each build waits at a barrier for the other: one after the other, the barrier would break (5 s)."""
    barrier = threading.Barrier(2, timeout=5)

    daemons = []

    def side_by_side(source):
        daemons.append(threading.current_thread().daemon)
        barrier.wait()
        return f"built {source}"

    def broken(source):
        raise RuntimeError(f"cannot build {source}")

    monkeypatch.setattr(counter_module, "ENGINES", {"fast": side_by_side, "reference": side_by_side, "bad": broken})
    engines = counter_module.Engines({"fast": "f", "reference": "r", "bad": "b"})
    threads = threading.active_count()
    # from a daemon thread, as in the forkserver: the builds are no daemons (ended mid-build at exit, a native
    # build aborts the process), the first one running on the calling thread itself
    caller = threading.Thread(target=engines.build, args=(["fast", "reference"],), daemon=True)
    caller.start()
    caller.join()
    assert engines.get("fast") == "built f" and engines.get("reference") == "built r"
    assert sorted(daemons) == [False, True]
    with monkeypatch.context() as patched:  # built already (a scan asks again for every shard): no thread starts
        patched.setattr(counter_module.threading, "Thread", None)
        engines.build(["fast", "reference"])
    assert threading.active_count() == threads  # every build thread joined
    with pytest.raises(RuntimeError, match="cannot build b"):
        engines.build(["bad"])
    barrier.reset()
    with pytest.raises(RuntimeError, match="cannot build b"):  # raised in the caller, after the others finished
        engines.build(["bad", "fast"])
    assert threading.active_count() == threads


WORKER_SEES = """
import os, sys
from concurrent.futures import ProcessPoolExecutor
from freqlab.scan.engines import local
from freqlab.tokenization import load_tokenizer
from freqlab.tokenization.load import cache_entry

spec, prebuilt = sys.argv[1], sys.argv[2] == "yes"
load_tokenizer(spec)  # fills the cache
local.start_forkserver(prebuild=(lambda: cache_entry(spec)) if prebuilt else None)
assert "FREQLAB_PREBUILD" not in os.environ  # set for the forkserver only
counter = load_tokenizer(spec)
with ProcessPoolExecutor(1, mp_context=local._context()) as pool:
    built = pool.submit(counter.is_built, "fastokens").result()
    ahead = pool.submit(eval, "len(__import__('freqlab.fastokens_ahead').fastokens_ahead._BUILT)").result()
    assert ahead == built  # built ahead, before the forkserver imported freqlab's tokenizer code
    # the forkserver took the entry out of its environment: what a worker starts builds nothing again
    assert pool.submit(eval, "__import__('os').environ.get('FREQLAB_PREBUILD')").result() is None
    print(built, pool.submit(counter.count, ["a b c", "xyz"]).result().tolist())
"""


def test_workers_forked_from_a_prebuilding_forkserver_start_with_fastokens_built(tokenizer_json, cache_on):
    path, reference = tokenizer_json
    seen = {}
    for prebuilt in ("yes", "no"):
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(WORKER_SEES), str(path), prebuilt],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        seen[prebuilt] = done.stdout.split(maxsplit=1)
    counts = str(expected(reference, ["a b c", "xyz"]))
    assert seen == {"yes": ["True", counts + "\n"], "no": ["False", counts + "\n"]}


SCAN_ON_A_POOL = """
import json, sys
from freqlab.scan import driver, scan
from freqlab.tokenization import load_tokenizer
from freqlab.tokenization.load import cache_entry

spec, corpus = sys.argv[1], sys.argv[2]
load_tokenizer(spec)  # the cache holds it: the driver's load is a hit
driver.fastokens_break_even_bytes = lambda backend, table=None: 0.0  # a scan big enough to prebuild for
made = driver.prebuild_entry
asked = []
driver.prebuild_entry = lambda corpus, settings: asked.append(made(corpus, settings)) or asked[-1]
pooled = scan(corpus, tokenizer=spec, workers=2, progress=False)
serial = scan(corpus, tokenizer=spec, workers=1, progress=False)
print(json.dumps({
    "entry": str(asked[0]()) == str(cache_entry(spec)),
    "workers": pooled.summary["scan"]["workers"],
    "backend": pooled.summary["tokenizer"]["backend"],
    "same": pooled.histogram.counts.tolist() == serial.histogram.counts.tolist()
    and pooled.histogram.lengths.tolist() == serial.histogram.lengths.tolist(),
    "tokens": int(pooled.histogram.tokens),
}))
"""


def test_a_pool_scan_whose_forkserver_prebuilt_reports_fastokens_and_counts_like_one_process(
    tokenizer_json, cache_on, tmp_path
):
    path, reference = tokenizer_json
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for part in range(2):
        lines = [json.dumps({"text": text}) for text in TEXTS[part::2]]
        (corpus / f"part-{part}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCAN_ON_A_POOL), str(path), str(corpus)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    tokens = sum(expected(reference, TEXTS))
    assert seen == {"entry": True, "workers": 2, "backend": "fastokens", "same": True, "tokens": tokens}


def test_a_process_exiting_while_its_prebuild_still_runs_ends_at_once():
    """A forkserver whose driver stopped mid-build exits: not by ending the build thread inside native code (which
    aborts: it is no daemon), nor by waiting for the rest of the build (which kept the caller's pipes open)."""
    code = (
        "import threading, freqlab.fastokens_ahead as p\n"
        "never = threading.Event()\n"
        "assert not p.start_building(never.wait).daemon  # a build that never ends\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""


def test_the_split_verdict_is_cached_and_a_prebuilt_counter_splits_like_the_drivers(cache_on, monkeypatch, tmp_path):
    """Counting around added tokens is verified once and kept in the entry: the forkserver's counter and the
    driver's (a hit: nothing compared) split the same tokens, so they share one fingerprint and one build, which
    leaves the reference out (no text needs it)."""
    from tokenizers import Tokenizer

    from .conftest import small_byte_level_bpe

    tokenizer = small_byte_level_bpe(600, 30)
    tokenizer.add_special_tokens(["<|eot|>"])
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    first = load_tokenizer(str(path))
    assert first.split_out == ("<|eot|>",)
    assert cache_module.read_entry(cache_entry(str(path)))["verdicts"]["split:fastokens"] is None
    monkeypatch.setattr(counter_module, "_BUILT", {})  # a fresh forkserver
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    compared = comparisons(monkeypatch)
    built = prebuild(cache_entry(str(path)))
    driver = load_tokenizer(str(path))
    assert compared == [] and built.split_out == driver.split_out == ("<|eot|>",)
    assert not built.is_built("hf-tokenizers")  # every routed string is split out: the reference is not needed
    assert built.fingerprint == driver.fingerprint and pickle.loads(pickle.dumps(driver)).is_built("fastokens")
    texts = [f"{t}<|eot|>{t}" for t in TEXTS]
    assert driver.count(texts).tolist() == expected(Tokenizer.from_file(str(path)), texts)


def test_a_loaded_counter_names_its_cache_entry_for_the_forkserver_to_build(tokenizer_json, cache_on, monkeypatch):
    """A notebook's ``scan(tokenizer=load_tokenizer(path), workers=2)``: the forkserver builds the entry the counter
    was loaded from, where every worker of every scan built its own."""
    from freqlab.scan import driver
    from freqlab.scan.settings import ScanSettings

    path, _ = tokenizer_json
    loaded = load_tokenizer(str(path))
    monkeypatch.setattr(driver, "fastokens_break_even_bytes", lambda backend, table=None: 0.0)
    corpus = ScanSettings().open_corpus()
    entry = driver.prebuild_entry(corpus, ScanSettings(tokenizer=loaded))
    assert entry is not None and entry() == cache_entry(str(path))
    special = load_tokenizer(str(path), add_special_tokens=True)  # its own entry, with its options
    assert driver.prebuild_entry(corpus, ScanSettings(tokenizer=special))() == cache_entry(
        str(path), add_special_tokens=True
    )
    nameless = counter_module.TokenCounter(**{**loaded._state(), "spec": ""})
    assert driver.prebuild_entry(corpus, ScanSettings(tokenizer=nameless)) is None
