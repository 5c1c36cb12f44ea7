"""The ledger of a scan: merges partials as shards finish, and cuts the scan exactly at its limits."""

from __future__ import annotations

from freqlab.corpus.base import UNREADABLE_FILE
from freqlab.errors import FreqlabError
from freqlab.scan.counts import ShardCount, truncate, unvouched


class Ledger:
    """Merges partials; with limits, commits shards strictly in corpus order and cuts the last one exactly.

    Results arrive in any order; a shard is committed once every shard before it is, so ``max_docs`` and
    ``max_tokens`` mean "the first N documents / tokens in shard order", whatever the worker count.
    """

    def __init__(self, max_docs: int | None, max_tokens: int | None) -> None:
        self.limited = max_docs is not None or max_tokens is not None
        self.docs_left, self.tokens_left = max_docs, max_tokens
        self.total = ShardCount(shard_id="total")
        self.waiting: dict[int, ShardCount] = {}
        self.next = 0
        self.exhausted = False  # a limit was reached
        self.unreadable: list[str] = []  # ids of shards whose file failed while being read (skipped)
        self.failed_documents = 0  # documents this run read from those files before they failed (none kept)
        self.resumed_documents = 0  # documents kept from checkpoints (read by an earlier run)
        self.resumed: set[int] = set()  # indices of the shards that came from checkpoints

    def add(self, index: int, part: ShardCount, resumed: bool = False) -> None:
        """Take the partial of shard ``index`` (``resumed``: from a checkpoint, read by an earlier run); raises the
        first bad record's error once it is committed.
        """
        if resumed:
            self.resumed.add(index)
        if not self.limited:
            self._commit(unvouched(part) if part.failed else part, part, resumed)
            return
        self.waiting[index] = part
        while self.next in self.waiting and not self.exhausted:
            read = self.waiting.pop(self.next)
            part, self.exhausted = truncate(read, self.docs_left, self.tokens_left)
            self._commit(part, read, self.next in self.resumed)
            if self.docs_left is not None:
                self.docs_left -= part.documents_read
            if self.tokens_left is not None:
                self.tokens_left -= part.tokens
            self.next += 1
        if self.exhausted:
            self.waiting.clear()

    def _commit(self, part: ShardCount, read: ShardCount, resumed: bool) -> None:
        """Merge ``part``, what is kept of the partial ``read`` (``resumed``: an earlier run's)."""
        if part.error is not None:
            raise FreqlabError(part.error)
        if part.skipped.get(UNREADABLE_FILE):
            self.unreadable.append(part.shard_id)
            if read.failed and not resumed:  # the file failed within the limits: what was read of it is not kept
                self.failed_documents += read.documents_read - part.documents_read
        if resumed:
            self.resumed_documents += part.documents_read
        self.total.merge(part)
