"""The on-disk tokenizer cache: a second load rebuilds nothing and verifies nothing; any change of the file or of
a version misses; a corrupt entry is ignored and rebuilt; concurrent writers leave a whole entry."""

from __future__ import annotations

import os
import threading
import time

import pytest

from freqlab.errors import FreqlabError
from freqlab.tokenization import builtin as builtin_module
from freqlab.tokenization import cache as cache_module
from freqlab.tokenization import load_tokenizer
from freqlab.tokenization import verify as verify_module
from freqlab.tokenization.cache import FORMAT, cache_dir, read_entry, write_entry

from .textsource import NON_ASCII, stdlib_documents

TEXTS = [*stdlib_documents(5, 200, max_chars=800), *NON_ASCII]


def comparisons(monkeypatch) -> list[str]:
    """Backends compared with the reference from now on (the comparison still runs)."""
    compared: list[str] = []
    real = verify_module._Comparison._verdict

    def spy(self, backend):
        compared.append(backend)
        return real(self, backend)

    monkeypatch.setattr(verify_module._Comparison, "_verdict", spy)
    return compared


def expected(tokenizer, texts):
    return [len(tokenizer.encode(t, add_special_tokens=False)) for t in texts]


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("FREQLAB_NO_CACHE", raising=False)
    monkeypatch.delenv("FREQLAB_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "freqlab" / "tokenizers"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "freqlab" / "tokenizers"
    monkeypatch.setenv("FREQLAB_CACHE_DIR", "~/mine")  # quoted in a shell: expanded here, never a folder named ~
    assert cache_dir() == tmp_path / "home" / "mine" / "tokenizers"
    # a review: ~ of no user was a folder named ~nouser in the working folder, a relative XDG_CACHE_HOME followed it
    monkeypatch.setenv("FREQLAB_CACHE_DIR", "~nouser-freqlab")
    with pytest.raises(FreqlabError, match="FREQLAB_CACHE_DIR=~nouser-freqlab: ~nouser-freqlab: no home folder"):
        cache_dir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FREQLAB_CACHE_DIR", "rel")
    assert cache_dir() == tmp_path / "rel" / "tokenizers"  # absolute: workers in other folders share it
    monkeypatch.delenv("FREQLAB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # ignored, as the XDG specification says
    assert cache_dir() == tmp_path / "home" / ".cache" / "freqlab" / "tokenizers"
    monkeypatch.setenv("FREQLAB_NO_CACHE", "1")
    assert cache_dir() is None


def test_a_second_load_hits_the_cache_and_verifies_nothing(tokenizer_json, cache_on, monkeypatch):
    path, reference = tokenizer_json
    compared = comparisons(monkeypatch)
    first = load_tokenizer(str(path))
    assert compared == ["tiktoken", "fastokens"] and cache_module.STATS == {"hits": 0, "misses": 1, "writes": 1}
    assert len(list(cache_on.glob("*.pickle"))) == 1
    compared.clear()
    monkeypatch.setattr(verify_module, "_VERIFIED", {})  # a new process
    second = load_tokenizer(str(path))
    assert compared == [] and cache_module.STATS["hits"] == 1
    assert second.backends == first.backends == ("fastokens", "tiktoken", "hf-tokenizers")
    assert second.vocab_hash == first.vocab_hash and second.name == str(path)
    assert second.count(TEXTS).tolist() == expected(reference, TEXTS)


def test_a_cache_that_cannot_be_written_is_named_with_the_reason_and_loads_still_count(
    tokenizer_json, cache_on, monkeypatch, tmp_path
):
    """A file where the cache folder would be: every load checks the tokenizer again, so the counter says why its
    load was not kept (a scan's report prints it); the counts are the same. A load that is kept says nothing."""
    path, reference = tokenizer_json
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FREQLAB_CACHE_DIR", str(blocker))
    counter = load_tokenizer(str(path))
    assert counter.cache_not_written == f"{blocker / 'tokenizers'}: Not a directory"
    assert cache_module.STATS["hits"] == 0 and blocker.read_text() == "not a folder"
    assert counter.count(TEXTS).tolist() == expected(reference, TEXTS)
    monkeypatch.setenv("FREQLAB_CACHE_DIR", str(tmp_path / "a-folder"))
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    kept = load_tokenizer(str(path))
    assert kept.cache_not_written is None and len(list((tmp_path / "a-folder").glob("*/*.pickle"))) == 1
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    assert load_tokenizer(str(path)).cache_not_written is None and cache_module.STATS["hits"] == 1


def test_only_a_failed_entry_write_is_a_load_the_cache_did_not_keep(tokenizer_json, cache_on, monkeypatch):
    """The fastokens input beside the entry only speeds a pool's start: failing to write it is not reported."""
    path, _ = tokenizer_json
    write = cache_module.write_private

    def no_fastokens_input(target, data):
        return "refused" if str(target).endswith(".fastokens") else write(target, data)

    monkeypatch.setattr(cache_module, "write_private", no_fastokens_input)
    assert load_tokenizer(str(path)).cache_not_written is None
    assert [p.suffix for p in cache_on.iterdir()] == [".pickle"]


def test_a_hit_whose_new_verdict_cannot_be_written_is_kept_and_says_so(tokenizer_json, cache_on, monkeypatch):
    """The entry stays (a hit), but the verdict computed now is computed on every run: said, as a cold load's failed
    write is (a review: a read-only cache re-verified fastokens on every run, 4 s, without a word)."""
    path, _ = tokenizer_json
    load_tokenizer(str(path), fastokens_rule=lambda backend: "left out")  # an entry without fastokens' verdict
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    monkeypatch.setattr(cache_module, "write_private", lambda target, data: f"{target}: refused")
    again = load_tokenizer(str(path))  # computes the verdict now and fails to add it to the entry
    assert cache_module.STATS == {"hits": 1, "misses": 1, "writes": 2}
    assert again.cache_not_written is not None and again.cache_not_written.endswith(": refused")


def test_a_changed_file_or_version_misses_and_verifies_again(tokenizer_json, cache_on, monkeypatch, tmp_path):
    path, reference = tokenizer_json
    load_tokenizer(str(path))
    compared = comparisons(monkeypatch)
    edited = tmp_path / "edited.json"  # the same tokenizer, other bytes
    edited.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    load_tokenizer(str(edited))
    assert compared == ["tiktoken", "fastokens"] and cache_module.STATS["misses"] == 2
    compared.clear()
    versions = cache_module.versions()
    monkeypatch.setattr(cache_module, "versions", lambda: (*versions[:-1], ("numpy", "0.0.0")))
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    counter = load_tokenizer(str(path))
    assert compared == ["tiktoken", "fastokens"] and cache_module.STATS["misses"] == 3
    assert counter.count(TEXTS).tolist() == expected(reference, TEXTS)


def test_a_file_replaced_while_it_loads_is_counted_but_not_cached_under_the_first_content(
    tokenizer_json, cache_on, tmp_path, monkeypatch
):
    """A review: cached_load hashed the file, then load() read it again; a file replaced in between stored the other
    tokenizer under the first content's key, and every later load of that content counted with the wrong tokenizer
    (vocab 1,200 for 2,000) until the cache was cleared. The key is checked again after the load: no entry then."""
    from .conftest import small_byte_level_bpe

    path, reference = tokenizer_json
    other = small_byte_level_bpe(300, 30)  # a smaller vocabulary: other counts
    racing = tmp_path / "racing.json"
    racing.write_bytes(path.read_bytes())
    real_key, swapped = cache_module.cache_key, []

    def key_then_swap(file, options, **how):
        key = real_key(file, options, **how)
        if not swapped:  # the first hash done, the file is replaced before load() reads it
            swapped.append(True)
            other.save(str(racing))
        return key

    monkeypatch.setattr(cache_module, "cache_key", key_then_swap)
    raced = load_tokenizer(str(racing))
    assert raced.cache_not_written == "the tokenizer file changed while it was loaded"
    assert raced.count(TEXTS).tolist() == expected(other, TEXTS)  # counted with what it read, and said so
    assert not list(cache_on.glob("*.pickle"))  # nothing under the first content's key
    monkeypatch.setattr(cache_module, "cache_key", real_key)
    racing.write_bytes(path.read_bytes())  # the first content back
    assert load_tokenizer(str(racing)).count(TEXTS).tolist() == expected(reference, TEXTS)


def test_a_file_replaced_and_put_back_while_it_loads_is_not_cached_under_the_first_content(
    tokenizer_json, cache_on, tmp_path, monkeypatch
):
    """A review: A -> B -> A during a cold load (a checkout back and forth, a sync tool) gave the second hash A's key
    again, and B's counter was stored under it: every later scan of A counted with B (12,277 tokens for 12,256). The
    file's inode and change time, read before the first hash, are compared after the load too."""
    import os

    from .conftest import small_byte_level_bpe

    path, reference = tokenizer_json
    racing = tmp_path / "racing.json"
    racing.write_bytes(path.read_bytes())
    (tmp_path / "a.json").write_bytes(path.read_bytes())
    small_byte_level_bpe(300, 30).save(str(tmp_path / "b.json"))
    real_key, real_read = cache_module.cache_key, builtin_module.read_loaded

    def swap(name: str) -> None:  # a new inode at the path, as git and sync tools write files
        (tmp_path / "copy").write_bytes((tmp_path / name).read_bytes())
        os.replace(tmp_path / "copy", racing)

    def key_then_swap(file, options, **how):
        key = real_key(file, options, **how)
        swap("b.json")  # the first hash done: B is what the load reads
        return key

    def read_then_swap_back(path):
        data = real_read(path)
        swap("a.json")  # read: A is back before any check
        return data

    monkeypatch.setattr(cache_module, "cache_key", key_then_swap)
    monkeypatch.setattr(builtin_module, "read_loaded", read_then_swap_back)
    raced = load_tokenizer(str(racing))
    assert raced.cache_not_written == "the tokenizer file changed while it was loaded"
    assert racing.read_bytes() == (tmp_path / "a.json").read_bytes()  # A back, as it was hashed
    assert not list(cache_on.glob("*.pickle"))  # nothing under A's key
    monkeypatch.setattr(cache_module, "cache_key", real_key)
    monkeypatch.setattr(builtin_module, "read_loaded", real_read)
    assert load_tokenizer(str(racing)).count(TEXTS).tolist() == expected(reference, TEXTS)


def test_a_link_switched_to_another_file_and_back_while_it_loads_is_not_cached(
    tokenizer_json, cache_on, tmp_path, monkeypatch
):
    """A second review: a symbolic link (or a folder) switched to B during the load and back left A's file as it was,
    its inode and times included, and B's counter was cached under A's key. The bytes the load read are compared
    with those the key hashed."""
    import os

    from .conftest import small_byte_level_bpe

    path, reference = tokenizer_json
    (tmp_path / "a.json").write_bytes(path.read_bytes())
    small_byte_level_bpe(300, 30).save(str(tmp_path / "b.json"))
    link = tmp_path / "current.json"
    link.symlink_to("a.json")
    real_key, real_read = cache_module.cache_key, builtin_module.read_loaded

    def point(name: str) -> None:  # as `ln -sfn` does: a new link renamed over the old
        (tmp_path / "new").symlink_to(name)
        os.replace(tmp_path / "new", link)

    def key_then_switch(file, options, **how):
        key = real_key(file, options, **how)
        point("b.json")
        return key

    def read_then_switch_back(path):
        data = real_read(path)
        point("a.json")
        return data

    monkeypatch.setattr(cache_module, "cache_key", key_then_switch)
    monkeypatch.setattr(builtin_module, "read_loaded", read_then_switch_back)
    raced = load_tokenizer(str(link))
    assert raced.cache_not_written == "the tokenizer file changed while it was loaded"
    assert os.readlink(link) == "a.json" and not list(cache_on.glob("*.pickle"))
    monkeypatch.setattr(cache_module, "cache_key", real_key)
    monkeypatch.setattr(builtin_module, "read_loaded", real_read)
    assert load_tokenizer(str(tmp_path / "a.json")).count(TEXTS).tolist() == expected(reference, TEXTS)


def test_the_same_ranks_named_tiktoken_and_model_are_two_loads(cache_on, tmp_path):
    """A review: the name decides the default regex (.tiktoken: cl100k's; a tokenizer.model of ranks: Llama 3's, or
    refused for other ranks), and the same bytes under the other name were the first load's cache hit."""
    import base64

    ranks = "".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256))
    (tmp_path / "bytes.tiktoken").write_text(ranks)
    (tmp_path / "bytes.model").write_text(ranks)
    assert "\\p{N}{1,3}+" in load_tokenizer(str(tmp_path / "bytes.tiktoken")).pattern  # cached
    with pytest.raises(FreqlabError, match="not Llama 3's"):  # as with an empty cache, not cl100k's hit
        load_tokenizer(str(tmp_path / "bytes.model"))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty"])
def test_a_corrupt_entry_is_ignored_and_rebuilt(tokenizer_json, cache_on, monkeypatch, damage):
    path, reference = tokenizer_json
    load_tokenizer(str(path))
    (entry,) = cache_on.glob("*.pickle")
    data = entry.read_bytes()
    entry.write_bytes({
        "garbage": b"not a cache entry",
        "truncated": data[: len(data) // 2],
        "flipped": data[:-10] + bytes([data[-10] ^ 1]) + data[-9:],
        "empty": b"",
    }[damage])  # fmt: skip
    assert read_entry(entry) is None
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    compared = comparisons(monkeypatch)
    counter = load_tokenizer(str(path))
    assert compared == ["tiktoken", "fastokens"] and cache_module.STATS == {"hits": 0, "misses": 2, "writes": 2}
    assert read_entry(entry) is not None  # rebuilt
    assert counter.count(TEXTS).tolist() == expected(reference, TEXTS)


def test_a_verdict_left_out_by_a_small_scan_is_computed_once_when_needed(tokenizer_json, cache_on, monkeypatch):
    path, _ = tokenizer_json
    compared = comparisons(monkeypatch)
    small = load_tokenizer(str(path), fastokens_rule=lambda backend: "small scan")
    assert small.backend == "tiktoken" and compared == ["tiktoken"]
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    large = load_tokenizer(str(path))
    assert large.backend == "fastokens" and compared == ["tiktoken", "fastokens"]
    assert cache_module.STATS == {"hits": 1, "misses": 1, "writes": 2}  # the entry now holds both verdicts
    monkeypatch.setattr(verify_module, "_VERIFIED", {})
    assert load_tokenizer(str(path)).backend == "fastokens" and compared == ["tiktoken", "fastokens"]


def test_no_cache_writes_nothing(tokenizer_json, cache_on, monkeypatch):
    monkeypatch.setenv("FREQLAB_NO_CACHE", "1")
    load_tokenizer(str(tokenizer_json[0]))
    assert not cache_on.exists() and cache_module.STATS == {"hits": 0, "misses": 0, "writes": 0}


def test_concurrent_writers_leave_one_whole_entry(tmp_path):
    path = tmp_path / "entry.pickle"
    entries = [{"state": i, "refusals": {}, "salad": [b"x" * 100_000] * 5, "verdicts": {}} for i in range(8)]

    def write(entry):
        for _ in range(20):
            write_entry(path, entry)

    threads = [threading.Thread(target=write, args=(e,)) for e in entries]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert read_entry(path)["state"] in range(8) and path.read_bytes().startswith(FORMAT)
    assert [p.name for p in tmp_path.iterdir()] == ["entry.pickle"]  # no temporary file left


def test_the_cache_lists_and_clears_its_own_files_and_nothing_else(tokenizer_json, cache_on, tmp_path):
    """Entries, fastokens inputs and unfinished writes are the cache's, known by their names; a user's file, a
    folder or a name that only looks alike stays, a link is removed as a link (its target stays, a dangling one goes
    too), and an unfinished write younger than UNFINISHED_WRITE_SECONDS is left to the write that may be running."""
    path, reference = tokenizer_json
    load_tokenizer(str(path))
    (entry,) = cache_on.glob("*.pickle")
    key = entry.stem
    unfinished = cache_on / f"{key}.pickle.ab_12x.tmp"
    unfinished.write_bytes(b"half")
    old = time.time() - cache_module.UNFINISHED_WRITE_SECONDS - 1
    os.utime(unfinished, (old, old))
    running = cache_on / f"{key}.pickle.fastokens.cd_34y.tmp"
    running.write_bytes(b"being written")
    target = tmp_path / "precious.txt"
    target.write_text("mine")
    link, dangling = cache_on / f"{'e' * 64}.pickle", cache_on / f"{'d' * 64}.pickle.fastokens"
    link.symlink_to(target)
    dangling.symlink_to(tmp_path / "gone")
    foreign = [cache_on / n for n in ("notes.txt", f"{key.upper()}.pickle", f"{key}.pickle.bak", "deadbeef.pickle")]
    for other in foreign:
        other.write_text("mine")
    (cache_on / f"{'f' * 64}.pickle").mkdir()
    listed = {f.path.name: f.kind for f in cache_module.cache_files(cache_on)}
    assert listed == {
        entry.name: "entry",
        f"{key}.pickle.fastokens": "fastokens input",
        unfinished.name: "unfinished write",
        running.name: "unfinished write",
        link.name: "entry",
        dangling.name: "fastokens input",
    }
    assert cache_module.cache_files() == cache_module.cache_files(cache_on)  # the folder of FREQLAB_CACHE_DIR
    sizes = {f.path.name: f.size for f in cache_module.cache_files(cache_on)}
    assert sizes[entry.name] == entry.stat().st_size and sizes[unfinished.name] == 4
    assert sizes[link.name] == len(str(target))  # the link's own size, not its target's
    removed, failed, left = cache_module.clear_cache(cache_on)
    assert {f.path.name for f in removed} == set(listed) - {running.name} and failed == []
    assert [f.path for f in left] == [running]
    assert [f.path for f in cache_module.cache_files(cache_on)] == [running] and target.read_text() == "mine"
    assert all(other.read_text() == "mine" for other in foreign) and (cache_on / f"{'f' * 64}.pickle").is_dir()
    again = load_tokenizer(str(path))  # a cold load again, written again
    assert cache_module.STATS["misses"] == 2 and again.count(TEXTS).tolist() == expected(reference, TEXTS)
    assert cache_module.cache_files(tmp_path / "absent") == []


def test_a_write_that_fails_at_its_rename_says_why(tmp_path, monkeypatch):
    """The folder is there and the temporary file written, the rename fails: the reason names the file."""

    def refused(source, destination):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache_module.os, "replace", refused)
    reason = cache_module.write_private(tmp_path / "entry.pickle", b"data")
    assert reason == f"{tmp_path / 'entry.pickle'}: Permission denied" and list(tmp_path.iterdir()) == []
