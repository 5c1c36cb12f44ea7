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
        # ... at the end of a shard read whole: the shards after it are read up to their first document (a worker
        # reads one past its cap), until one holds a record (the scan stopped there) or none is left (read_all: the
        # scan is whole; their blank lines and documents sampled out, as the cut leaves out, are counted then)
        self.looking = False
        self.read_all = False
        self.tail = ShardCount(shard_id="tail")
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
            if self.exhausted and read.complete and part.documents_read == read.documents_read:
                self.looking = True  # nothing of it cut: does anything follow?
                self._tail(read, part)
            self._commit(part, read, self.next in self.resumed)
            if self.docs_left is not None:
                self.docs_left -= part.documents_read
            if self.tokens_left is not None:
                self.tokens_left -= part.tokens
            self.next += 1
        while self.looking and self.next in self.waiting:
            read = self.waiting.pop(self.next)
            if read.documents_read or read.error is not None or not read.complete:  # a record follows the limit
                self.looking = False
            else:
                self._tail(read)
                self.next += 1
        if self.looking and self.next >= len(self.files):  # none follows: the scan is whole
            self.looking, self.read_all = False, True
            self.total.sampled_out += self.tail.sampled_out
            self.total.blank_lines += self.tail.blank_lines
        if self.done:
            self.waiting.clear()

    @property
    def done(self) -> bool:
        """A limit was reached and nothing more is needed: no shard to read, no result to wait for."""
        return self.exhausted and not self.looking

    def _tail(self, read: ShardCount, kept: ShardCount | None = None) -> None:
        """What ``read`` holds beyond ``kept`` (none kept: all of it) that a whole scan counts: blank lines and
        documents sampled out after the last document kept (none of a file that failed: :func:`unvouched` keeps
        none of its counts, a review: its blank lines were added to a scan said whole).
        """
        if read.failed:
            return
        self.tail.sampled_out += read.sampled_out - (kept.sampled_out if kept is not None else 0)
        self.tail.blank_lines += read.blank_lines - (kept.blank_lines if kept is not None else 0)

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
