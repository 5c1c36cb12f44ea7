"""A scan's output folder: the lock, the checkpoints, and the results (``lengths.parquet``, ``summary.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from freqlab.formats import CHECKPOINTS_DIR, LENGTHS_FILE, SUMMARY_FILE
from freqlab.histogram import LengthHistogram
from freqlab.scan.checkpoint import CheckpointStore, OutputLock, write_atomic
from freqlab.scan.counts import ShardCount
from freqlab.scan.ledger import Ledger


class ScanOutput:
    """``with ScanOutput(out, fingerprint, resume) as output``: locks ``out`` for the scan, starts or checks its
    checkpoints, and writes the results. ``out=None``: nothing is written, nothing is resumed.
    """

    def __init__(self, out: Path | None, fingerprint: dict, resume: bool) -> None:
        self.out = out
        self.resume = resume
        self.lock = OutputLock(out) if out is not None else None
        self.store = CheckpointStore(out / CHECKPOINTS_DIR, fingerprint) if out is not None else None

    def __enter__(self) -> ScanOutput:
        if self.lock is not None and self.store is not None:
            self.lock.acquire()
            try:
                self.store.start(self.resume)
            except BaseException:
                self.lock.release()
                raise
        return self

    def __exit__(self, *exc) -> None:
        if self.lock is not None:
            self.lock.release()

    @property
    def recounted(self) -> dict[str, int]:
        """Checkpoints found but not trusted (recounted), by reason."""
        return dict(self.store.recounted) if self.store is not None else {}

    def resume_into(self, shards: list, ledger: Ledger, on_error: str) -> set[int]:
        """Feed the ledger every trusted checkpoint (when resuming); the indices of the shards they cover."""
        done: set[int] = set()
        if not self.resume or self.store is None:
            return done
        for index, shard in enumerate(shards):
            part = self.store.load(shard.id, shard.identity())
            if part is None or (ledger.limited and part.log is None) or (on_error == "raise" and part.skipped):
                continue
            done.add(index)
            ledger.add(index, part)
        return done

    def save(self, part: ShardCount, shard) -> None:
        """Checkpoint a finished shard."""
        if self.store is not None:
            self.store.save(part, shard.identity())

    def write(self, histogram: LengthHistogram, summary: dict) -> None:
        """Write ``lengths.parquet`` and ``summary.json`` (atomically); records their paths in the summary."""
        if self.out is None:
            return
        lengths_path, summary_path = self.out / LENGTHS_FILE, self.out / SUMMARY_FILE
        summary["outputs"] = {"lengths": str(lengths_path), "summary": str(summary_path)}
        write_atomic(lengths_path, writer=histogram.to_parquet)
        write_atomic(summary_path, (json.dumps(summary, indent=2) + "\n").encode())
