"""Per-shard checkpoints that make a scan resumable.

``OUT/checkpoints/manifest.json`` records a fingerprint of what is being counted (corpus, shard list,
tokenizer vocabulary, special tokens, sampling and limits); each finished shard's partial is written to
``OUT/checkpoints/<safe shard id>.parquet`` atomically (temporary file + ``os.replace``), so an interrupted
scan leaves only whole checkpoints. Worker count and batch size are not in the fingerprint: they do not
change the result. Nor is ``on_error``: a checkpoint holding skipped records is simply recounted (and
raises) when resuming with ``on_error="raise"``. A shard that ended with an ``unreadable-file`` skip is
finished: its checkpoint holds the documents read before the failure and the skip.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from freqlab.errors import FreqlabError
from freqlab.scan.counts import DocumentLog, LengthCounts, ShardCount

MANIFEST = "manifest.json"
FORMAT = "freqlab.scan.checkpoint"
VERSION = 1


def safe_name(shard_id: str) -> str:
    """A file name for a shard id: readable characters kept, plus a hash so distinct ids never collide.

    >>> safe_name("data/train/chunk1/example_0.jsonl.zst")
    'data_train_chunk1_example_0.jsonl.zst-38eca308ddb0926f'
    """
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", shard_id).strip("._")[-80:]
    digest = hashlib.blake2b(shard_id.encode(), digest_size=8).hexdigest()
    return f"{readable}-{digest}"


def write_atomic(path: Path, data: bytes | None = None, writer: Callable[[str], object] | None = None) -> None:
    """Write ``data`` (or call ``writer(tmp_path)``) to a temporary file beside ``path``, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            if data is not None:
                handle.write(data)
        if writer is not None:
            writer(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CheckpointStore:
    """The checkpoints of one scan in ``directory``."""

    def __init__(self, directory: str | Path, fingerprint: dict) -> None:
        self.directory = Path(directory)
        self.fingerprint = json.loads(json.dumps(fingerprint, sort_keys=True, default=str))

    def path(self, shard_id: str) -> Path:
        """Where the checkpoint of ``shard_id`` lives."""
        return self.directory / f"{safe_name(shard_id)}.parquet"

    def start(self, resume: bool) -> None:
        """Check the manifest when resuming (a clear error when settings differ); otherwise start afresh."""
        manifest = self.directory / MANIFEST
        if resume and manifest.is_file():
            try:
                previous = json.loads(manifest.read_text())
            except ValueError:
                raise FreqlabError(f"{manifest}: not a readable checkpoint manifest; rescan without --resume") from None
            differences = [
                key
                for key in sorted({*previous, *self.fingerprint})
                if previous.get(key) != self.fingerprint.get(key)
            ]
            if differences:
                detail = "; ".join(
                    f"{key}: {_short(previous.get(key))} then, {_short(self.fingerprint.get(key))} now"
                    for key in differences
                )
                raise FreqlabError(
                    f"cannot resume from {self.directory}: the checkpoints were made with other settings "
                    f"({detail}); rerun with the same settings, or without --resume (or with another --out) "
                    "to start over"
                )
            return
        if self.directory.is_dir():  # a fresh scan: old checkpoints must not leak into it
            for old in self.directory.glob("*.parquet"):
                old.unlink()
        write_atomic(manifest, json.dumps(self.fingerprint, indent=1, sort_keys=True).encode())

    def save(self, part: ShardCount) -> None:
        """Checkpoint a finished shard's partial (atomically)."""
        frame, header = _to_frame(part)
        write_atomic(
            self.path(part.shard_id),
            writer=lambda tmp: frame.write_parquet(tmp, metadata={"freqlab": json.dumps(header)}),
        )

    def load(self, shard_id: str) -> ShardCount | None:
        """The checkpointed partial of a shard, or None when there is none (or it is unreadable)."""
        path = self.path(shard_id)
        if not path.is_file():
            return None
        try:
            header = json.loads(pl.read_parquet_metadata(path)["freqlab"])
            frame = pl.read_parquet(path)
        except Exception:  # a damaged checkpoint is recounted, never trusted
            return None
        if header.get("format") != FORMAT or header.get("shard_id") != shard_id:
            return None
        return _from_frame(frame, header)


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


# A partial as rows: without a log, (source, length, count) with length 0 holding empty documents; with a
# log, (source, code, position) per document in order (the counts are rebuilt from it).
def _to_frame(part: ShardCount) -> tuple[pl.DataFrame, dict]:
    header = {
        "format": FORMAT,
        "version": VERSION,
        "shard_id": part.shard_id,
        "skipped": dict(part.skipped),
        "sampled_out": part.sampled_out,
        "blank_lines": part.blank_lines,
        "complete": part.complete,
    }
    if part.log is not None:
        codes, sources, positions = part.log.arrays()
        labels = part.log.labels
        header["reasons"] = part.log.reasons
        frame = pl.DataFrame(
            {
                "source": pl.Series([labels[s] for s in sources.tolist()], dtype=pl.Utf8),
                "code": codes,
                "position": positions,
            }
        )
        return frame, header
    sources, lengths, counts = [], [], []
    for label in {*part.lengths, *part.empty}:
        values, numbers = part.lengths[label].to_arrays() if label in part.lengths else (np.zeros(0, np.int64),) * 2
        if part.empty.get(label):
            values = np.concatenate([[0], values]).astype(np.int64)
            numbers = np.concatenate([[part.empty[label]], numbers]).astype(np.int64)
        sources += [label] * values.size
        lengths.append(values)
        counts.append(numbers)
    frame = pl.DataFrame(
        {
            "source": pl.Series(sources, dtype=pl.Utf8),
            "length": np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
            "count": np.concatenate(counts) if counts else np.zeros(0, np.int64),
        }
    )
    return frame, header


def _from_frame(frame: pl.DataFrame, header: dict) -> ShardCount:
    part = ShardCount(
        shard_id=header["shard_id"],
        skipped=Counter(header.get("skipped", {})),
        sampled_out=int(header.get("sampled_out", 0)),
        blank_lines=int(header.get("blank_lines", 0)),
        complete=bool(header.get("complete", True)),
    )
    if "code" in frame.columns:
        names = frame["source"].to_list()
        labels = list(dict.fromkeys([None, *names]))
        index = {label: k for k, label in enumerate(labels)}
        sources = np.array([index[name] for name in names], np.int32)
        codes = frame["code"].to_numpy().astype(np.int64)
        positions = frame["position"].to_numpy().astype(np.int64)
        part.skipped = Counter()  # recounted from the log, with everything else
        part.add_log(DocumentLog([codes], [sources], [positions], labels, list(header.get("reasons", []))))
        return part
    for (label,), rows in frame.group_by(["source"], maintain_order=True):
        lengths = rows["length"].to_numpy().astype(np.int64)
        counts = rows["count"].to_numpy().astype(np.int64)
        if np.any(lengths == 0):
            part.empty[label] += int(counts[lengths == 0].sum())
        if np.any(lengths > 0):
            part.lengths.setdefault(label, LengthCounts()).add_counts(lengths[lengths > 0], counts[lengths > 0])
    return part
