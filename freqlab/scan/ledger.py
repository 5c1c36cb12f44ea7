"""The ledger of a scan: merges partials as shards finish, and cuts the scan exactly at its limits."""

from __future__ import annotations

from collections.abc import Sequence

from freqlab.corpus.base import UNREADABLE_FILE
from freqlab.errors import FreqlabError
from freqlab.scan.counts import ShardCount, truncate, unvouched


class Ledger:
    """Merges partials; with limits, commits shards strictly in corpus order and cuts the last one exactly.

    Results arrive in any order; a shard is committed once every shard before it is, so ``max_docs`` and
    ``max_tokens`` mean "the first N documents / tokens in shard order", whatever the worker count.
    """

    def __init__(self, max_docs: int | None, max_tokens: int | None, files: Sequence[str] = ()) -> None:
        self.limited = max_docs is not None or max_tokens is not None
        # per shard, the file it reads (the parts of one big file share theirs): a bad record is raised once the
        # parts of its file before it are in, so that it is the file's first (a later part may finish first)
        self.parts: dict[str, list[int]] = {}
        for index, file in enumerate(files):
            self.parts.setdefault(file, []).append(index)
        self.files = list(files)
        self.arrived: set[int] = set()
        self.errors: dict[int, str] = {}
        self.docs_left, self.tokens_left = max_docs, max_tokens
        self.total = ShardCount(shard_id="total")
        self.waiting: dict[int, ShardCount] = {}
        self.next = 0
        self.exhausted = False  # a limit was reached
        # ... by the corpus's last document: its last shard read to its end, nothing of it cut (the scan is whole)
        self.read_all = False
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
        self.arrived.add(index)
        if not self.limited:
            if part.error is not None:
                self.errors[index] = part.error
            else:
                self._commit(unvouched(part) if part.failed else part, part, resumed)
            self._raise_first_error()
            return
        self.waiting[index] = part
        while self.next in self.waiting and not self.exhausted:
            read = self.waiting.pop(self.next)
            part, self.exhausted = truncate(read, self.docs_left, self.tokens_left)
            last = self.next == len(self.files) - 1
            self.read_all = self.exhausted and last and read.complete and part.documents_read == read.documents_read
            self._commit(part, read, self.next in self.resumed)
            if self.docs_left is not None:
                self.docs_left -= part.documents_read
            if self.tokens_left is not None:
                self.tokens_left -= part.tokens
            self.next += 1
        if self.exhausted:
            self.waiting.clear()

    def _earlier(self, index: int) -> list[int]:
        """The parts of shard ``index``'s file before it."""
        parts = self.parts.get(self.files[index], []) if index < len(self.files) else []
        return [k for k in parts if k < index]

    def awaited(self) -> set[int] | None:
        """With a bad record held: the parts of its file before it not yet in, the only shards still worth reading
        (the scan fails with that file's first bad record); None when no bad record is held.
        """
        if not self.errors:
            return None
        return {k for index in self.errors for k in self._earlier(index) if k not in self.arrived}

    def _raise_first_error(self) -> None:
        """Raise the first bad record of a file once every part of that file before it has arrived (a scan with
        limits commits in corpus order, and so raises in that order, anyway).
        """
        for index in sorted(self.errors):
            earlier = self._earlier(index)
            if all(k in self.arrived for k in earlier):
                raise FreqlabError(self.errors[min(k for k in (*earlier, index) if k in self.errors)])

    def raise_held(self) -> None:
        """Raise the first bad record held, if any (the scan ended: nothing more will arrive)."""
        if self.errors:
            raise FreqlabError(self.errors[min(self.errors)])

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
