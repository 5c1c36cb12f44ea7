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
