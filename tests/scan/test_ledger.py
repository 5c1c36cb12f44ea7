"""The ledger merges the shards' counts as they arrive, in any order, and raises a bad record in corpus order."""

from __future__ import annotations

import pytest

from freqlab.errors import FreqlabError
from freqlab.scan.counts import ShardCount
from freqlab.scan.ledger import Ledger


def bad(shard_id: str, message: str) -> ShardCount:
    return ShardCount(shard_id=shard_id, error=message)


def test_a_files_first_bad_record_is_raised_whichever_of_its_parts_finishes_first():
    """One big file cut into parts on two workers: part 1 (line 5,000 bad) may finish before part 0 (line 5 bad);
    the error was then line 5,000's, now the file's first. Another file's part is not waited for."""
    ledger = Ledger(None, None, [("big.jsonl",), ("big.jsonl",), ("other.jsonl",)])
    ledger.add(1, bad("big.jsonl@1", "big.jsonl:5000: malformed-json"))  # part 0 not in: nothing raised yet
    ledger.add(2, ShardCount(shard_id="other.jsonl"))
    with pytest.raises(FreqlabError, match=r"^big\.jsonl:5: malformed-json$"):
        ledger.add(0, bad("big.jsonl@0", "big.jsonl:5: malformed-json"))


def test_a_bad_record_is_raised_once_the_parts_before_it_are_in_and_at_once_in_a_file_alone():
    ledger = Ledger(None, None, [("big.jsonl",), ("big.jsonl",)])
    ledger.add(1, bad("big.jsonl@1", "big.jsonl:5000: malformed-json"))
    with pytest.raises(FreqlabError, match=r"^big\.jsonl:5000: malformed-json$"):
        ledger.add(0, ShardCount(shard_id="big.jsonl@0"))  # part 0 was good
    alone = Ledger(None, None, [("a.jsonl",), ("b.jsonl",)])
    with pytest.raises(FreqlabError, match=r"^b\.jsonl:2: null-text$"):
        alone.add(1, bad("b.jsonl", "b.jsonl:2: null-text"))


def test_with_a_bad_record_held_only_its_files_earlier_parts_are_still_worth_reading():
    """A review: parts go out largest first, so a small part 0 could go out last and the error wait for the whole
    corpus (32 shards against 1). The driver reads only what ``awaited`` names while a bad record is held."""
    ledger = Ledger(None, None, ["big.jsonl", "big.jsonl", "big.jsonl", "other.jsonl"])
    assert ledger.awaited() is None  # no bad record: every shard is read
    ledger.add(2, bad("big.jsonl@2", "big.jsonl:9000: malformed-json"))
    assert ledger.awaited() == {0, 1}
    ledger.add(1, ShardCount(shard_id="big.jsonl@1"))
    assert ledger.awaited() == {0}
    with pytest.raises(FreqlabError, match=r"^big\.jsonl:9000: malformed-json$"):
        ledger.add(0, ShardCount(shard_id="big.jsonl@0"))
    held = Ledger(None, None, ["a.jsonl", "a.jsonl"])
    held.errors[1] = "a.jsonl:7: null-text"  # what a scan that ended with one held would raise
    with pytest.raises(FreqlabError, match=r"^a\.jsonl:7: null-text$"):
        held.raise_held()


def test_the_parts_of_a_remote_file_are_parts_of_one_file():
    """A review: the parts of a remote .jsonl (no local path) were each their own file to the ledger."""
    from freqlab.corpus.fields import Fields
    from freqlab.corpus.jsonl import JsonlShard
    from freqlab.corpus.remote_files import RemoteFile

    remote = RemoteFile("https://example.org/big.jsonl", "big.jsonl", 30 << 20, 0)
    parts = [JsonlShard(f"big.jsonl@{k}", remote, Fields(), k << 20, (k + 1) << 20) for k in range(3)]
    assert {part.part_of() for part in parts} == {"https://example.org/big.jsonl"} and not parts[0].local_paths()
