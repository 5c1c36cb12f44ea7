"""Per-shard checkpoints that make a scan resumable, and never make it wrong.

``OUT/checkpoints/manifest.json`` records the scan's fingerprint (see ``ScanSettings.fingerprint``: corpus and
shard list, tokenizer vocabulary, special tokens, sampling and limits); each finished shard's partial is written to
``OUT/checkpoints/<safe shard id>.parquet`` atomically (temporary file + ``os.replace``), so an interrupted scan
leaves only whole checkpoints. A scan of many small shards writes them in groups instead
(``OUT/checkpoints/group+<random>.parquet``, :meth:`CheckpointStore.stage` and :meth:`~CheckpointStore.flush`:
each partial's rows one after another, each with its own header): a Parquet file costs ~0.6 ms to write, more than
counting a small file. Every checkpoint is self-describing and checked before it is used:

- it carries the fingerprint's hash: a checkpoint of another scan (other tokenizer, corpus, limits...) is never
  used, even when it sits in the same folder;
- it carries its shard's identity (the data file's size and modification time): a file changed since is recounted;
- it carries a checksum of its content and its totals: a damaged or edited checkpoint is recounted, never trusted.

While a scan runs it holds a lock on ``OUT`` (``OUT/.lock``, released by the kernel if the process dies), so a
second scan writing to the same folder stops at once with one line instead of mixing checkpoints. Worker count
and batch size are not in the fingerprint: they do not change the result. Nor is ``on_error``: a checkpoint
holding skipped records is simply recounted (and raises) when resuming with ``on_error="raise"``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from freqlab.corpus.base import PASSED_OVER, UNREADABLE_FILE
from freqlab.errors import FreqlabError, brief, cannot_write
from freqlab.files import TEMPORARY, parquet_metadata, read_parquet, resolved_output, write_atomic, write_parquet
from freqlab.formats import CHECKPOINT_FORMAT as FORMAT  # kept for import compatibility (and used here)
from freqlab.formats import CHECKPOINT_MANIFEST as MANIFEST  # kept for import compatibility (and used here)
from freqlab.formats import CHECKPOINT_VERSION as VERSION  # kept for import compatibility (and used here)
from freqlab.formats import MANIFEST_KEYS, METADATA_KEY, fingerprint_hash, manifest_fingerprint
from freqlab.scan.counts import BACKEND_UNKNOWN, DocumentLog, LengthCounts, ShardCount

if TYPE_CHECKING:
    import polars as pl

LOCK = ".lock"
LOCK_TEXT = re.compile(r"pid \d+")  # what OutputLock writes in it


def safe_name(shard_id: str) -> str:
    """A file name for a shard id: readable characters kept, plus a hash so distinct ids never collide.

    >>> safe_name("data/train/chunk1/example_0.jsonl.zst")
    'data_train_chunk1_example_0.jsonl.zst-38eca308ddb0926f'
    """
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", shard_id).strip("._")[-80:]
    digest = hashlib.blake2b(shard_id.encode("utf-8", "backslashreplace"), digest_size=8).hexdigest()
    return f"{readable}-{digest}"


class OutputLock:
    """An exclusive lock on an output folder (``flock`` on ``OUT/.lock``; the kernel drops it when the process
    ends, however it ends). A second holder gets a one-line FreqlabError at once.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.handle = None
        self.created = False  # whether this acquire made OUT/.lock (a refused scan then takes it away again)

    def acquire(self) -> None:
        """Take the lock on the output folder, or fail naming the scan that holds it."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            return
        if self.folder.is_symlink() and not self.folder.exists():
            raise FreqlabError(
                f"{self.folder}: a symlink to {os.readlink(self.folder)}, which does not exist; create that folder "
                "or choose another --out"
            )
        resolved_output(self.folder)  # another user's link in a shared folder is not followed, for the lock either
        lock = self.folder / LOCK
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # never through a link: opening it for writing would truncate whatever it leads to
            flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            try:
                fd = os.open(lock, flags | os.O_CREAT | os.O_EXCL, 0o666)
                self.created = True
            except FileExistsError:
                fd = os.open(lock, flags)
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO, a device: the user's, and no lock
                os.close(fd)
                raise FreqlabError(f"{lock}: not a file (a FIFO, a device), where freqlab keeps its lock; move it away")
            handle = os.fdopen(fd, "a+")
        except OSError as exc:
            if lock.is_symlink():
                raise FreqlabError(f"{lock}: a symbolic link; remove it or choose another --out") from exc
            if lock.is_dir():
                raise FreqlabError(f"{lock}: a folder, where freqlab keeps its lock; move it away") from exc
            if self.folder.exists() and not self.folder.is_dir():  # /dev/null, a file: "(File exists)" said (a review)
                raise FreqlabError(f"{self.folder}: not a folder; --out names the folder the results go in") from exc
            raise FreqlabError(f"{self.folder}: cannot use as output folder ({exc.strerror or exc})") from exc
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            handle.close()
            raise FreqlabError(
                f"{self.folder} is in use by another scan ({owner}); wait for it, or choose another --out"
            ) from None
        handle.seek(0)
        held = handle.read(1 << 10)
        if held.strip() and LOCK_TEXT.fullmatch(held.strip()) is None:  # a file of the user's, named as ours
            handle.close()
            raise FreqlabError(
                f"{lock}: holds {brief(held.strip())}, not freqlab's lock (a scan writes its pid there); move it "
                "away, or choose another --out"
            )
        handle.seek(0)
        handle.truncate()
        try:
            handle.write(f"pid {os.getpid()}\n")
            handle.flush()
        except OSError as exc:  # a full disk: "[Errno 28] No space left on device", no file named (a review)
            with contextlib.suppress(OSError):  # the close flushes the pid again, failing again (a review)
                handle.close()
            if self.created:  # an empty lock of this acquire's left behind: gone, as a refused scan's
                lock.unlink(missing_ok=True)
            raise cannot_write(lock, exc) from None
        self.handle = handle

    def release(self, refused: bool = False) -> None:
        """Release the lock; ``refused``: the scan wrote nothing, so a lock file this acquire made goes too (a review:
        a scan refused for the user's summary.json left a .lock in their folder).
        """
        if self.handle is not None:
            if refused and self.created:
                with contextlib.suppress(OSError):  # removed while held: no other scan took it meanwhile
                    os.unlink(self.folder / LOCK)
            self.handle.close()  # closing drops the flock
            self.handle = None


class CheckpointStore:
    """The checkpoints of one scan in ``directory``."""

    def __init__(self, directory: str | Path, fingerprint: dict) -> None:
        self.directory = Path(directory)
        self.fingerprint = json.loads(json.dumps(fingerprint, sort_keys=True, default=str))
        self.hash = fingerprint_hash(self.fingerprint)
        self.recounted: Counter[str] = Counter()  # checkpoints found but not used, by reason
        self._staged: dict[tuple[str, ...], list[tuple[pl.DataFrame, dict]]] = {}  # by columns, for :meth:`flush`
        self._groups: dict[str, list[tuple[pl.DataFrame, dict]]] | None = None  # shard id -> grouped partials

    def path(self, shard_id: str) -> Path:
        """Where the checkpoint of ``shard_id`` lives."""
        return self.directory / f"{safe_name(shard_id)}.parquet"

    def start(self, resume: bool) -> None:
        """Check the manifest when resuming (a clear error when settings differ); otherwise start afresh."""
        manifest = self.directory / MANIFEST
        if resume and manifest.exists():
            previous = self._read_manifest(manifest)
            then, now = _what_is_read(previous), _what_is_read(self.fingerprint)
            differences = [key for key in sorted({*then, *now}) if then.get(key) != now.get(key)]
            if differences:
                detail = "; ".join(_difference(key, then.get(key), now.get(key)) for key in differences)
                raise FreqlabError(
                    f"cannot resume from {self.directory}: the checkpoints were made with other settings "
                    f"({detail}); rerun with the same settings, or without --resume (or with another --out) "
                    "to start over"
                )
            # what may differ is what the corpus's walk passed over (a README added beside the data): the run
            # goes on under the fingerprint its checkpoints were made with
            self.fingerprint, self.hash = previous, fingerprint_hash(previous)
            self._remove_temporaries()
            return
        if self.directory.is_dir():  # a fresh scan: old checkpoints must not leak into it
            self._clear()
        write_atomic(
            manifest,
            json.dumps({"fingerprint": self.fingerprint, "hash": self.hash}, indent=1, sort_keys=True).encode(),
        )

    def _clear(self) -> None:
        """Remove the checkpoints (and temporary files) freqlab wrote here, and nothing else: a folder that also
        holds files freqlab did not write is refused, in one line naming one, before anything is removed.
        """
        entries = sorted(self.directory.iterdir())
        foreign = [entry for entry in entries if not _written_by_freqlab(entry)]
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise FreqlabError(
                f"{self.directory} holds files freqlab did not write ({foreign[0].name}{more}); a fresh scan "
                "removes the old checkpoints there: move those files away, or choose another --out"
            )
        for entry in entries:
            if entry.name != MANIFEST:
                entry.unlink()

    def _remove_temporaries(self) -> None:
        """Remove what writes interrupted by an earlier run left (``.<checkpoint>.<random>.tmp``): nothing writes
        them now, the folder's lock is ours.
        """
        for entry in self.directory.iterdir():
            if TEMPORARY.fullmatch(entry.name) is not None and _written_by_freqlab(entry):
                entry.unlink(missing_ok=True)

    def _read_manifest(self, manifest: Path) -> dict:
        try:
            return manifest_fingerprint(json.loads(manifest.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FreqlabError(
                f"{manifest}: not a readable checkpoint manifest ({type(exc).__name__}); move it away and rescan "
                "without --resume, or choose another --out"
            ) from None

    def save(self, part: ShardCount, identity: dict) -> None:
        """Checkpoint a finished shard's partial (atomically), with its shard's identity and a checksum."""
        frame, header = self._sealed(part, identity)
        write_parquet(self.path(part.shard_id), frame, header)

    def stage(self, part: ShardCount, identity: dict) -> None:
        """Keep a finished shard's partial for the next :meth:`flush`, which writes it with the others staged."""
        frame, header = self._sealed(part, identity)
        self._staged.setdefault(tuple(frame.columns), []).append((frame, header))

    @property
    def staged(self) -> int:
        """Partials staged and not written yet."""
        return sum(map(len, self._staged.values()))

    def flush(self) -> None:
        """Write the staged partials: one group file per set of columns (logs of sampled shards have one more),
        a partial alone in its own checkpoint, as :meth:`save` writes it. Each set leaves the stage once written:
        a write cut short (an interrupt, a full disk) leaves it staged for the next flush.
        """
        import polars as pl

        for columns, staged in list(self._staged.items()):
            if len(staged) == 1:
                frame, header = staged[0]
                write_parquet(self.path(header["shard_id"]), frame, header)
            else:
                frame = pl.concat([frame for frame, _ in staged], how="vertical")
                group = {"format": FORMAT, "version": VERSION, "group": [header for _, header in staged]}
                write_parquet(self.directory / f"{GROUP_PREFIX}{os.urandom(8).hex()}.parquet", frame, group)
                self._groups = None  # read again when next needed
            del self._staged[columns]

    def _sealed(self, part: ShardCount, identity: dict) -> tuple[pl.DataFrame, dict]:
        """A partial's rows and header, with the scan's fingerprint, the shard's identity and the checksum."""
        frame, header = _to_frame(part)
        header.update(fingerprint=self.hash, identity=identity, rows=frame.height)
        header["checksum"] = _checksum(frame, header)
        return frame, header

    def load(self, shard_id: str, identity: dict) -> ShardCount | None:
        """The checkpointed partial of a shard, or None when there is none or it cannot be trusted (then
        :attr:`recounted` says why). A shard checkpointed more than once (alone and in groups, by runs resumed
        after its file changed) has its first trusted checkpoint used.
        """
        candidates: list[Callable[[], tuple[pl.DataFrame, dict]]] = []
        path = self.path(shard_id)
        if path.exists():
            candidates.append(lambda: _read_checkpoint(path))
        candidates += [lambda found=found: found for found in self._grouped().get(shard_id, ())]
        reasons = []
        for candidate in candidates:
            try:
                frame, header = candidate()
                reason = _distrust(frame, header, shard_id, self.hash, identity)
                if reason is None:
                    return _from_frame(frame, header)
            except Exception:  # unreadable, a header that is no JSON object, bad columns...: recounted, never trusted
                reason = "damaged"
            reasons.append(reason)
        if reasons:
            self.recounted[reasons[0]] += 1
        return None

    def _grouped(self) -> dict[str, list[tuple[pl.DataFrame, dict]]]:
        """The partials in this folder's group files, by shard id (read once); a damaged group file gives none."""
        if self._groups is None:
            self._groups = {}
            for path in sorted(self.directory.glob(f"{GROUP_PREFIX}*.parquet")):
                if _GROUP.fullmatch(path.name) is None:  # not a name freqlab gives: not a checkpoint
                    continue
                try:
                    frame, header = _read_checkpoint(path)
                    headers, start = header["group"], 0
                    for header in headers:
                        rows = int(header["rows"])
                        self._groups.setdefault(str(header["shard_id"]), []).append((frame.slice(start, rows), header))
                        start += rows
                except Exception:  # what it held is recounted: those shards find no checkpoint here
                    self.recounted["damaged"] += 1
        return self._groups


#: the versions read: 2 is 3 without counted_by (its partials' documents per backend are unknown)
READ_VERSIONS = (2, VERSION)
GROUP_PREFIX = "group+"  # a group file's name: "+" is never in safe_name's, so no shard's checkpoint is named so
_CHECKPOINT = re.compile(r"[A-Za-z0-9._-]*-[0-9a-f]{16}\.parquet")  # safe_name(shard id) + ".parquet"
_GROUP = re.compile(r"group\+[0-9a-f]{16}\.parquet")


def _read_checkpoint(path: Path) -> tuple[pl.DataFrame, dict]:
    """A checkpoint's rows, and the JSON header freqlab keeps in its Parquet metadata (KeyError when none)."""
    frame, metadata = read_parquet(path)
    return frame, json.loads(metadata[METADATA_KEY])


def _read_header(path: Path):
    """The JSON header freqlab keeps in a checkpoint's Parquet metadata (KeyError when there is none)."""
    return json.loads(parquet_metadata(path)[METADATA_KEY])


# what a difference of a fingerprint's key says, where its values do not say it themselves
_MEANING = {
    "shards": " (the corpus's files or parts differ: a file added, removed or renamed, or one grown or shrunk "
    "across a part boundary)",
    "corpus_description": " (the corpus's files, formats or fields differ)",
}


def _what_is_read(fingerprint: dict) -> dict:
    """``fingerprint`` without the corpus description's counts of what was passed over unread."""
    description = fingerprint.get("corpus_description")
    if not isinstance(description, dict):
        return fingerprint
    # the split read is compared as a setting, the splits files are named for as the files (and older checkpoints'
    # descriptions hold neither)
    kept = {k: v for k, v in description.items() if k not in PASSED_OVER and k not in ("split", "splits_named")}
    if description.get("root"):
        # files on disk are where they are, not how they were spelled (corp, ./corp/, its absolute path, a preset's
        # --data-files too: a review found a resume from another working folder refused)
        kept.pop("id", None)
        fingerprint = {k: v for k, v in fingerprint.items() if k != "corpus"}
    return {**fingerprint, "corpus_description": kept}


def _written_by_freqlab(path: Path) -> bool:
    """Whether ``path`` (in a checkpoints folder) is a file freqlab wrote there: its manifest, a checkpoint whose
    own header names the shard its file name is made of, or a temporary file an interrupted write left.
    """
    if path.is_symlink() or not path.is_file():
        return False
    name = path.name
    if (temporary := TEMPORARY.fullmatch(name)) is not None:
        written = temporary.group("name")
        return written == MANIFEST or any(pattern.fullmatch(written) for pattern in (_CHECKPOINT, _GROUP))
    try:
        if name == MANIFEST:
            return set(json.loads(path.read_bytes())) == set(MANIFEST_KEYS)
        if _GROUP.fullmatch(name) is not None:
            header = _read_header(path)
            return header["format"] == FORMAT and isinstance(header["group"], list)
        if _CHECKPOINT.fullmatch(name) is None:
            return False
        header = _read_header(path)
        return header["format"] == FORMAT and f"{safe_name(header['shard_id'])}.parquet" == name
    except Exception:  # unreadable, no freqlab header, not JSON...: not known to be ours
        return False


def _distrust(frame: pl.DataFrame, header, shard_id: str, fingerprint: str, identity: dict) -> str | None:
    """Why a checkpoint must not be used, or None."""
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("version") not in READ_VERSIONS:
        return "from another freqlab version"
    if header.get("shard_id") != shard_id:
        return "damaged"
    if header.get("fingerprint") != fingerprint:
        return "made by another scan"
    stored, current = header.get("identity"), json.loads(json.dumps(identity))
    if stored != current:
        if isinstance(stored, dict) and isinstance(current, dict) and set(stored) != set(current):
            # e.g. size and modification time only: a file rewritten with its time put back would pass
            return "written by an older freqlab, whose file identity checked less"
        return "its data file changed"
    if header.get("checksum") != _checksum(frame, {k: v for k, v in header.items() if k != "checksum"}):
        return "damaged or edited"
    if "failed" not in header and (header.get("skipped") or {}).get(UNREADABLE_FILE):
        # written before a failed file was marked: its documents would count, which the ledger now refuses
        return "written by an older freqlab, which counted a failed file's documents"
    return None


def _checksum(frame: pl.DataFrame, header: dict) -> str:
    """blake2b of the header (canonical JSON) and every column's values."""
    import polars as pl

    digest = hashlib.blake2b(json.dumps(header, sort_keys=True).encode(), digest_size=16)
    for name in frame.columns:
        column = frame[name]
        digest.update(name.encode())
        if column.dtype == pl.Utf8:
            values = ("\1" if value is None else value for value in column.to_list())  # \1: no label
            digest.update("\0".join(values).encode("utf-8", "surrogatepass"))
        else:
            digest.update(column.to_numpy().astype(np.int64).tobytes())
    return digest.hexdigest()


def _difference(key: str, then, now) -> str:
    """``key: THEN then, NOW now`` and what it means; for two dicts (the corpus's description), each key of theirs
    that differs, so that the message says what changed (``corpus_description.files: 4 then, 5 now``).
    """
    if isinstance(then, dict) and isinstance(now, dict):
        inner = [k for k in sorted({*then, *now}) if then.get(k) != now.get(k)]
        shown = ", ".join(f"{key}.{k}: {_short(then.get(k))} then, {_short(now.get(k))} now" for k in inner)
    else:
        shown = f"{key}: {_short(then)} then, {_short(now)} now"
    return shown + _MEANING.get(key, "")


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


# A partial as rows: without a log, (source, length, count) with length 0 holding empty documents; with a
# log, (source, code, position) per document in order (the counts are rebuilt from it).
def _to_frame(part: ShardCount) -> tuple[pl.DataFrame, dict]:
    import polars as pl

    header = {
        "format": FORMAT,
        "version": VERSION,
        "shard_id": part.shard_id,
        "skipped": dict(part.skipped),
        "sampled_out": part.sampled_out,
        "blank_lines": part.blank_lines,
        "counted_by": None if part.counted_by is None else dict(sorted(part.counted_by.items())),
        "complete": part.complete,
        "failed": part.failed,
        "documents_read": part.documents_read,
        "tokens": part.tokens,
    }
    if part.log is not None:  # one row per document: its code, its label's index, its position if sampled
        codes, sources, positions = part.log.arrays()
        header["reasons"] = part.log.reasons
        header["labels"] = part.log.labels
        columns = {"source_index": sources, "code": codes}
        if part.log.positions:
            columns["position"] = positions
        backends, gaps = part.log.backend_codes(), part.log.gap_counts()
        if backends is not None and backends.size == codes.size:
            columns["backend"] = backends
            header["backends"] = part.log.backend_names
        if gaps is not None and gaps.size == codes.size:
            columns["blank_before"] = gaps
        return pl.DataFrame(columns), header
    sources, lengths, counts = [], [], []
    for label in sorted({*part.lengths, *part.empty}, key=lambda s: (s is None, s or "")):
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
    """The partial of a checkpoint; ValueError when its content contradicts its header."""
    part = ShardCount(
        shard_id=header["shard_id"],
        skipped=Counter({str(k): int(v) for k, v in header.get("skipped", {}).items()}),
        sampled_out=int(header.get("sampled_out", 0)),
        blank_lines=int(header.get("blank_lines", 0)),
        # version 2 did not keep them: unknown (the summary then says none)
        counted_by=Counter({str(k): int(v) for k, v in by.items()})
        if isinstance(by := header.get("counted_by"), dict)
        else None,
        complete=bool(header.get("complete", True)),
        failed=bool(header.get("failed", False)),
    )
    if "code" in frame.columns:
        labels = [None if label is None else str(label) for label in header["labels"]]
        sources = frame["source_index"].to_numpy().astype(np.int32)
        codes = frame["code"].to_numpy().astype(np.int64)
        positions = [frame["position"].to_numpy().astype(np.int64)] if "position" in frame.columns else []
        reasons = [str(r) for r in header.get("reasons", [])]
        names = [str(b) for b in header.get("backends", [])]
        backends = [frame["backend"].to_numpy().astype(np.int8)] if "backend" in frame.columns else []
        gaps = [frame["blank_before"].to_numpy().astype(np.int64)] if "blank_before" in frame.columns else []
        if codes.size and (
            int(codes.min()) < -len(reasons)
            or not 0 <= int(sources.min()) <= int(sources.max()) < len(labels)
            or any(np.any(np.diff(p) <= 0) for p in positions)
            or any(int(b.min()) < BACKEND_UNKNOWN or int(b.max()) >= len(names) for b in backends)
            or any(int(g.min()) < 0 or int(g.sum()) > part.blank_lines for g in gaps)
        ):
            raise ValueError("bad log")
        part.skipped = Counter()  # recounted from the log, with everything else
        part.add_log(DocumentLog([codes], [sources], positions, labels, reasons, backends, names, gaps))
    else:
        for (label,), rows in frame.group_by(["source"], maintain_order=True):
            lengths = rows["length"].to_numpy().astype(np.int64)
            counts = rows["count"].to_numpy().astype(np.int64)
            if (lengths.size and int(lengths.min()) < 0) or (counts.size and int(counts.min()) <= 0):
                raise ValueError("negative length or non-positive count")
            if np.any(lengths == 0):
                part.empty[label] += int(counts[lengths == 0].sum())
            if np.any(lengths > 0):
                part.lengths.setdefault(label, LengthCounts()).add_counts(lengths[lengths > 0], counts[lengths > 0])
    if (part.documents_read, part.tokens) != (header.get("documents_read"), header.get("tokens")):
        raise ValueError("totals do not match the content")
    return part
