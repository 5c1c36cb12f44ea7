"""A scan's output folder: the lock, the checkpoints, and the results (``lengths.parquet``, ``summary.json``)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from freqlab.errors import FreqlabError
from freqlab.files import forget_written, has_freqlab_header, starts_with, write_atomic, write_parquet
from freqlab.formats import CHECKPOINTS_DIR, FIGURES_DIR, LENGTHS_FILE, SUMMARY_FILE
from freqlab.histogram import LengthHistogram
from freqlab.paths import unambiguous
from freqlab.scan.checkpoint import GROUP_PREFIX, LOCK, MANIFEST, CheckpointStore, OutputLock, safe_name
from freqlab.scan.counts import ShardCount
from freqlab.scan.ledger import Ledger

#: a scan of more shards than this checkpoints them in groups (one file per group, written at least every
#: :data:`GROUP_SECONDS` and at :data:`GROUP_SHARDS` shards): a Parquet file costs ~0.6 ms to write, which a corpus
#: of small files paid per file (5,000 files of 2,000 characters: 3 s of a 7.6 s scan, measured)
GROUP_ABOVE = 256
GROUP_SHARDS = 4096
GROUP_SECONDS = 1.0
SUMMARY_START = b'{\n  "corpus": {\n'  # how every summary.json a scan wrote begins (json.dumps, indent 2)
SUMMARY_BYTES = 1 << 26  # one saved again in another layout is parsed up to this size


def written_paths(shard_ids: list[str]) -> list[str]:
    """The paths (relative to the output folder) that a scan of shards ``shard_ids`` may write: the results, the
    lock, each shard's checkpoint and a group file (its name random), and figures (``--plot``; names stand in).
    """
    checkpoints = [f"{CHECKPOINTS_DIR}/{safe_name(i)}.parquet" for i in shard_ids]
    group = f"{CHECKPOINTS_DIR}/{GROUP_PREFIX}0123456789abcdef.parquet"
    figures = [f"{FIGURES_DIR}/figure.{suffix}" for suffix in ("png", "pdf", "svg")]
    return [LENGTHS_FILE, SUMMARY_FILE, LOCK, f"{CHECKPOINTS_DIR}/{MANIFEST}", group, *checkpoints, *figures]


def written_by_freqlab(path: Path) -> bool:
    """Whether a scan may replace ``path`` (``OUT/lengths.parquet`` or ``OUT/summary.json``): absent, or a file a
    freqlab scan wrote (Parquet with freqlab's header; a summary's JSON object). Anything else is the user's: a
    corpus file named so, or a result of another tool.
    """
    if not path.exists():  # (a dangling link included: as before, the write follows it)
        return True
    if path.name == LENGTHS_FILE:
        return has_freqlab_header(path)
    if not path.is_file():  # a FIFO would block the open, a device behind a link never end: no scan wrote it
        return False
    if starts_with(path, SUMMARY_START):  # as ScanOutput.write writes it (indented JSON, corpus first)
        return True
    try:
        if path.stat().st_size > SUMMARY_BYTES:
            return False
        summary = json.loads(path.read_bytes())  # one saved again in another layout (an editor, json.tool)
        return isinstance(summary, dict) and {"corpus", "documents", "scan"} <= summary.keys()
    except (OSError, ValueError, RecursionError):
        return False


class ScanOutput:
    """``with ScanOutput(out, fingerprint, resume, shards) as output``: locks ``out`` for the scan, starts or checks
    its checkpoints, and writes the results. ``out=None``: nothing is written, nothing is resumed. With more than
    :data:`GROUP_ABOVE` ``shards``, finished shards are checkpointed in groups: at most :data:`GROUP_SECONDS` of
    finished work waits to be written (a scan killed outright recounts it), and the rest is written however the
    scan ends (an interrupt included), before the lock is released.
    """

    def __init__(self, out: Path | None, fingerprint: dict, resume: bool, shards: int = 0) -> None:
        self.out = out
        self.resume = resume
        self.lock = OutputLock(out) if out is not None else None
        self.store = CheckpointStore(out / CHECKPOINTS_DIR, fingerprint) if out is not None else None
        self.grouped = shards > GROUP_ABOVE
        self.nothing_to_resume = False  # a resume found no checkpoint of this scan at all (it starts over)
        self.flushed = time.monotonic()

    def __enter__(self) -> ScanOutput:
        if self.lock is not None and self.store is not None:
            self.lock.acquire()
            try:
                for name in (LENGTHS_FILE, SUMMARY_FILE):  # refused now, not after the whole corpus is counted
                    if (self.out / name).is_dir():
                        raise FreqlabError(f"{self.out / name}: a folder, where the scan writes its {name}")
                    if not written_by_freqlab(self.out / name):
                        raise FreqlabError(
                            f"{self.out / name}: a file freqlab did not write, which the scan would replace with its "
                            f"{name}; move it away, or choose another --out"
                        )
                lengths, summary = (os.path.realpath(self.out / name) for name in (LENGTHS_FILE, SUMMARY_FILE))
                if lengths == summary:  # a link of one to the other (a review: the summary overwrote the lengths)
                    raise FreqlabError(
                        f"{self.out / SUMMARY_FILE} and {self.out / LENGTHS_FILE} lead to one file ({lengths}), where "
                        "a scan writes two; remove the link, or choose another --out"
                    )
                self.store.start(self.resume)
            except BaseException:
                self.lock.release(refused=True)
                raise
        return self

    def __exit__(self, kind, *exc) -> None:
        try:
            if kind is None:
                self.flush()
            else:  # the scan's own error (an interrupt) is the one to report; what cannot be written is recounted
                with contextlib.suppress(Exception):
                    self.flush()
        finally:
            if self.lock is not None:
                self.lock.release()

    @property
    def recounted(self) -> dict[str, int]:
        """Checkpoints found but not trusted (recounted), by reason."""
        return dict(self.store.recounted) if self.store is not None else {}

    def resume_into(self, shards: list, ledger: Ledger, on_error: str) -> set[int]:
        """Feed the ledger every trusted checkpoint (when resuming); the indices of the shards they cover. A shard
        read only up to a limit is counted again: a recounted file before it may now leave the limit more of it.
        """
        done: set[int] = set()
        if not self.resume or self.store is None:
            return done
        for index, shard in enumerate(shards):
            part = self.store.load(shard.id, shard.identity())
            if part is None:
                continue
            if ledger.limited and (part.log is None or not part.complete):
                self.store.recounted["read up to the limit only" if part.log else "no document log for limits"] += 1
                continue
            if on_error == "raise" and part.skipped:
                self.store.recounted["skips, raised now"] += 1
                continue
            done.add(index)
            ledger.add(index, part, resumed=True)
        # no manifest, or one without checkpoints beside it (a scan stopped before any shard ended)
        self.nothing_to_resume = not done and not self.store.recounted
        return done

    def save(self, part: ShardCount, shard) -> None:
        """Checkpoint a finished shard (in a group: staged, written with the others when it is time)."""
        if self.store is None:
            return
        if not self.grouped:
            self.store.save(part, shard.identity())
            return
        self.store.stage(part, shard.identity())
        if self.store.staged >= GROUP_SHARDS or time.monotonic() - self.flushed >= GROUP_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write the staged checkpoints."""
        if self.store is not None:
            self.store.flush()
        self.flushed = time.monotonic()

    def write(self, histogram: LengthHistogram, summary: dict) -> None:
        """Write ``lengths.parquet`` and ``summary.json`` (atomically); records their paths in the summary."""
        if self.out is None:
            return
        self.flush()
        lengths_path, summary_path = self.out / LENGTHS_FILE, self.out / SUMMARY_FILE
        summary["outputs"] = {"lengths": unambiguous(lengths_path), "summary": unambiguous(summary_path)}
        # the summary is made first and replaces the old one right after the lengths do: a scan stopped or failing
        # while writing them leaves the earlier pair, never new lengths beside an earlier summary (reviews)
        write_atomic(
            summary_path,
            (json.dumps(summary, indent=2) + "\n").encode(),
            # not to_parquet, which expands ~: this folder's name is expanded already (./~x would read as ~x's home)
            before_replacing=lambda: write_parquet(lengths_path, histogram.to_frame(), histogram.parquet_header()),
        )
        forget_written(self.out / FIGURES_DIR)  # an earlier scan's figures are not these results' (--plot redraws)
