"""Finding data files: paths, folders (recursive) and globs, expanded in sorted order, each file once.

Each path, folder or glob is expanded in sorted order (deterministic), duplicates dropped (a file reached twice,
through a symlink or two overlapping globs, is read once and the duplicate reported). A file named explicitly
must have a known format (see :mod:`freqlab.corpus.registry`); files of unknown formats met inside folders or
matched by globs (a README, a checksum file) are passed over and counted. Hidden files and folders (``.git``) are
counted and not entered; each real folder is walked once, so symlinks pointing back up the tree cannot make the walk
endless. Only regular files are read: a FIFO, socket or device (or a symlink to one, like ``/dev/zero``) would block or
never end, so inside a folder it is passed over and counted, and named explicitly it is an error.

A missing path, a glob matching nothing, or a file that cannot be opened raises FreqlabError at once.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freqlab.corpus.base import FileChanged  # defined in base (Shard.reading catches it); kept importable here
from freqlab.corpus.registry import supported
from freqlab.display import first_few
from freqlab.errors import FreqlabError, ParameterError
from freqlab.paths import expand_home, file_identity

# Metadata files of saved datasets: JSON, but never JSON-lines data (a glob like saved/* matches them).
DATASETS_METADATA = frozenset({"state.json", "dataset_info.json", "dataset_dict.json"})


@dataclass(frozen=True)
class DataFile:
    """One data file: its path, its id (path relative to the corpus root, stable when the data moves), and
    its size, modification time and status-change time when the corpus was opened (what checkpoints and readers
    check). The status-change time (ctime) is set by the system on every write and on ``touch``, so a file rewritten
    to the same size with its modification time put back (``cp -p``, ``touch -r``, ``rsync -t``) shows; it changes
    with the file's metadata too (``chmod``, a rename), which costs a recount, never a wrong count.
    """

    path: str
    id: str
    size: int
    mtime_ns: int
    ctime_ns: int = 0

    @property
    def remote(self) -> bool:
        """Whether the file is read over the network (a URL: :mod:`freqlab.corpus.remote_files`)."""
        return False

    @property
    def stamp(self) -> tuple[int, int, int]:
        """``(size, mtime_ns, ctime_ns)``: what keys a cache of something read from the file (its Parquet footer)."""
        return self.size, self.mtime_ns, self.ctime_ns

    def identity(self) -> dict[str, Any]:
        """Size, modification and status-change times: a checkpoint of this file is trusted only while all three are
        unchanged.
        """
        return {"size": self.size, "mtime_ns": self.mtime_ns, "ctime_ns": self.ctime_ns}

    def check_unchanged(self) -> None:
        """Raise :class:`FileChanged` when the file is gone or changed since the corpus was opened (checked
        before and after each shard is read: a file rewritten in place, even to the same size, is refused).
        """
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            raise FileChanged("the file is gone", self.path) from None
        if info.st_size != self.size:
            raise FileChanged(f"size {self.size} -> {info.st_size} bytes", self.path)
        if info.st_mtime_ns != self.mtime_ns:
            raise FileChanged("same size, but modified since the corpus was opened", self.path)
        if info.st_ctime_ns != self.ctime_ns:
            raise FileChanged(
                "same size and modification time, but its status changed since the corpus was opened "
                "(rewritten with its time put back, or its permissions changed)",
                self.path,
            )


@dataclass
class FoundFiles:
    """Files found: ``(path, format name)`` in order, plus what was passed over and why."""

    files: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # unknown formats, and the formats ``format`` left out
    other_formats: dict[str, int] = field(default_factory=dict)  # files left out by ``format``, by their format
    not_regular: list[str] = field(default_factory=list)  # FIFOs, sockets, devices
    duplicates: list[str] = field(default_factory=list)  # the same file reached again
    hidden: list[str] = field(default_factory=list)  # hidden files and folders in a folder walked (not entered)
    patterns: list[str] = field(default_factory=list)  # the glob patterns expanded (absolute)
    link_targets: list[str] = field(default_factory=list)  # the real targets of dangling symlinks met
    split_used: bool = False  # a saved DatasetDict or a datasets cache folder was read: ``split`` chose its subset
    splits_named: dict[str, int] = field(default_factory=dict)  # files of a folder named for several splits, by split
    _seen: set[object] = field(default_factory=set)
    _folders: set[str] = field(default_factory=set)

    def add(self, path: str, fmt: str) -> None:
        """Record ``path`` with its format ``fmt`` (a file found twice is kept once: through a symlink, or another
        hard link to it, as ``cp -al`` and ``rsync --link-dest`` snapshots make).
        """
        key = file_identity(path)
        if key in self._seen:
            self.duplicates.append(path)
            return
        self._seen.add(key)
        self.files.append((path, fmt))

    def enter(self, folder: str) -> bool:
        """Whether ``folder`` is walked now: False when this real folder was walked already (a symlink loop)."""
        key = os.path.realpath(folder)
        if key in self._folders:
            return False
        self._folders.add(key)
        return True

    @property
    def folders(self) -> tuple[str, ...]:
        """The real paths of the folders walked, and of the targets of dangling symlinks met (walked once made)."""
        return tuple(sorted({*self._folders, *self.link_targets}))


def read_by_a_later_walk(
    out: str, written: Iterable[str], folders: Iterable[str], patterns: Iterable[str]
) -> str | None:
    """The folder or glob pattern (of a corpus's :attr:`FoundFiles.folders` and ``patterns``) through which a later
    expansion of the same specs would read one of the paths ``written`` (relative) in the folder ``out`` (which
    may not exist yet), or None. A folder walked (or the target of a dangling symlink) reaches a path at or below it
    through no hidden entry; a pattern reaches what it lists and what lies below a folder it lists, through no
    hidden entry. Both ``out`` as given and its real path are checked (a walk follows symlinks).
    """
    folders, patterns = set(folders), [(pattern, Path(pattern).parts) for pattern in patterns]

    @functools.cache
    def real(parts: tuple[str, ...]) -> str:
        return os.path.realpath(os.path.join(*parts))

    seen: set[tuple[str, ...]] = set()  # a folder above many written paths is checked once
    for candidate in dict.fromkeys((os.path.abspath(out), os.path.realpath(out))):
        start = Path(candidate).parts
        for name in written:
            names = (*start, *name.split("/"))
            for depth in range(len(names), 0, -1):  # the path itself, then each folder above it
                if any(part.startswith(".") for part in names[depth:]):
                    break  # a walk does not enter a hidden entry, nor anything under it
                if (prefix := names[:depth]) in seen:
                    break
                seen.add(prefix)
                here = os.path.join(real(prefix[:-1]), prefix[-1]) if depth > 1 else prefix[0]
                if here in folders:
                    return os.path.join(*prefix)
                for pattern, parts in patterns:  # the last components first: a cheap test that fails for most
                    if (parts[-1] == "**" or fnmatch.fnmatchcase(prefix[-1], parts[-1])) and _glob_matches(
                        prefix, parts
                    ):
                        return pattern
    return None


def glob_anchor(spec: str) -> list[str]:
    """The absolute patterns of a glob ``spec`` for :func:`read_by_a_later_walk`: as given (the working folder's own
    glob characters escaped: they are no pattern) and through the real path of its folder before the first
    wildcard (a symlink there leads a later glob elsewhere).
    """
    path = expand_home(spec)
    anchored = os.path.normpath(path if os.path.isabs(path) else os.path.join(glob.escape(os.getcwd()), path))
    parts = Path(anchored).parts
    fixed = _first_wildcard(parts)
    head = glob.escape(os.path.realpath(os.path.join(*parts[:fixed]))) if fixed else ""
    return list(dict.fromkeys((anchored, os.path.join(head, *parts[fixed:]) if fixed else anchored)))


def _first_wildcard(parts: Sequence[str]) -> int:
    """The index of the first path part holding a glob wildcard (``len(parts)``: none)."""
    return next((k for k, part in enumerate(parts) if glob.has_magic(part)), len(parts))


def spec_reach(specs: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(folders, patterns)`` of local data-file specs read by another library (``datasets``), without walking them:
    each folder's real path and each glob's patterns (:func:`glob_anchor`), for :func:`read_by_a_later_walk`.
    """
    folders, patterns = [], []
    for spec in specs:
        path = expand_home(spec)
        if glob.has_magic(path):
            patterns += glob_anchor(spec)
        elif os.path.isdir(path):
            folders.append(os.path.realpath(path))
    return tuple(folders), tuple(patterns)


def _glob_matches(names: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether ``glob.glob(pattern, recursive=True)`` would list the path of components ``names`` (were it there):
    component by component, ``**`` standing for any number of them; a hidden component is matched only by a
    pattern component starting with "." (``parts``: the pattern's components).
    """

    def match(i: int, j: int) -> bool:
        if j == len(parts):
            return i == len(names)
        if parts[j] == "**":  # zero or more components, none of them hidden
            for k in range(i, len(names) + 1):
                if match(k, j + 1):
                    return True
                if k < len(names) and names[k].startswith("."):
                    return False
            return False
        if i == len(names) or (names[i].startswith(".") and not parts[j].startswith(".")):
            return False
        return fnmatch.fnmatchcase(names[i], parts[j]) and match(i + 1, j + 1)

    return match(0, 0)


def is_regular(path: str) -> bool:
    """A regular file (after following symlinks)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def is_saved_dataset(folder: str) -> bool:
    """True for a folder written by ``Dataset.save_to_disk`` or ``DatasetDict.save_to_disk``."""
    return os.path.isfile(os.path.join(folder, "dataset_dict.json")) or (
        os.path.isfile(os.path.join(folder, "state.json")) and os.path.isfile(os.path.join(folder, "dataset_info.json"))
    )


def saved_dataset_files(folder: str, split: str) -> list[str]:
    """The Arrow files of a saved dataset, in their recorded order (for a DatasetDict: of ``split``)."""
    dict_file = os.path.join(folder, "dataset_dict.json")
    if os.path.isfile(dict_file):
        splits = saved_splits(dict_file)
        if split not in splits:
            raise FreqlabError(f"{folder}: saved DatasetDict has no split {split!r} (splits: {', '.join(splits)})")
        folder = os.path.join(folder, split)
    state_file = os.path.join(folder, "state.json")
    state = _read_json(state_file)
    entries = state.get("_data_files", []) if isinstance(state, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("filename"), str) for entry in entries
    ):
        raise FreqlabError(f"{state_file}: cannot read saved-dataset metadata (no list of files under '_data_files')")
    return [os.path.join(folder, entry["filename"]) for entry in entries]


def saved_splits(dict_file: str) -> list[str]:
    """The split names a saved DatasetDict's ``dataset_dict.json`` lists."""
    splits = meta.get("splits", []) if isinstance(meta := _read_json(dict_file), dict) else None
    if not isinstance(splits, list) or not all(isinstance(name, str) for name in splits):
        raise FreqlabError(f"{dict_file}: cannot read saved-dataset metadata (no list of split names under 'splits')")
    return splits


#: the words ``datasets`` takes for each split in folder and file names (``datasets.data_files.SPLIT_KEYWORDS``)
SPLIT_KEYWORDS = {
    "train": ("train", "training"),
    "validation": ("validation", "valid", "dev", "val"),
    "test": ("test", "testing", "eval", "evaluation"),
}
_SPLIT_OF = {word: split for split, words in SPLIT_KEYWORDS.items() for word in words}
# a split word between separators, as datasets' patterns match it ("**/*[-._ 0-9/]train[-._ 0-9]*")
_SPLIT_WORD = re.compile(rf"(?:^|[-._ 0-9])({'|'.join(sorted(_SPLIT_OF, key=len, reverse=True))})(?=[-._ 0-9]|$)")


def split_named(relative: str) -> str | None:
    """The split a file's path within a folder names, as ``datasets`` reads names: the first folder, else the file
    name (without its last suffix), holding a split word between separators (``train/``, ``dev_v2/``, ``test.jsonl``,
    ``wiki_train.jsonl``, ``test-00000-of-00001.parquet``); None for any other path.

    >>> split_named("data/test-00000-of-00001.parquet"), split_named("train/a.jsonl"), split_named("latest.jsonl")
    ('test', 'train', None)
    """
    *folders, name = relative.split(os.sep)
    for part in (*folders, name.rsplit(".", 1)[0]):  # en.train.jsonl: the words between its dots too
        if match := _SPLIT_WORD.search(part):  # case counts, as for datasets
            return _SPLIT_OF[match.group(1)]
    return None


def is_datasets_cache(folder: str) -> bool:
    """True for a folder of the ``datasets`` cache (``load_dataset``'s prepared data): a ``dataset_info.json`` beside
    Arrow files (``<name>-<split>[-NNNNN-of-NNNNN].arrow``, ``.map()``'s ``cache-*.arrow``), and no ``state.json``
    (a saved dataset). Its metadata is read by :func:`datasets_cache_files`: one that does not say which files are a
    split is an error, since the folder read whole would add up its splits and their ``.map()`` copies.
    """
    if not os.path.isfile(os.path.join(folder, "dataset_info.json")):
        return False
    if os.path.isfile(os.path.join(folder, "state.json")):
        return False
    try:
        return any(entry.endswith(".arrow") for entry in os.listdir(folder))
    except OSError:
        return False


def datasets_cache_files(folder: str, split: str) -> list[str]:
    """The Arrow files of ``split`` in a ``datasets`` cache folder (:func:`is_datasets_cache`), in shard order: the
    other splits and the ``cache-*.arrow`` results of ``.map()`` beside them are no part of it. A run of
    ``-of-N`` shards must be whole (else the split would be read short).
    """
    path = os.path.join(folder, "dataset_info.json")
    info = _read_json(path)
    splits = info.get("splits") if isinstance(info, dict) else None
    name = info.get("dataset_name") or info.get("builder_name") if isinstance(info, dict) else None
    if not isinstance(splits, dict) or not isinstance(name, str) or not name:
        raise FreqlabError(
            f"{path}: a datasets cache folder whose dataset_info.json names no splits or dataset (read whole, it "
            "would add up its splits and .map() copies): give the split's Arrow files"
        )
    if split not in splits:
        raise FreqlabError(
            f"{folder}: a datasets cache folder (dataset_info.json) without split {split!r} (splits: "
            f"{', '.join(map(str, splits))}): choose one with --split"
        )
    entry = splits[split]
    name = entry["dataset_name"] if isinstance(entry, dict) and isinstance(entry.get("dataset_name"), str) else name
    own = re.compile(rf"{re.escape(name)}-{re.escape(str(split))}(-(\d{{5}})-of-(\d{{5}}))?\.arrow")
    matches = sorted((m for m in map(own.fullmatch, os.listdir(folder)) if m), key=lambda m: m.string)
    if not matches:
        raise FreqlabError(f"{folder}: a datasets cache folder whose split {split!r} has no file {name}-{split}*.arrow")
    shards = [m for m in matches if m.group(1)]
    if shards:  # a whole run 0..N-1 of one N, alone
        count = int(shards[0].group(3))
        numbers = [int(m.group(2)) for m in shards]
        if len(shards) != len(matches) or {int(m.group(3)) for m in shards} != {count} or numbers != list(range(count)):
            raise FreqlabError(
                f"{folder}: split {split!r} of a datasets cache folder is not one whole run of shards "
                f"({', '.join(m.string for m in matches[:4])}{', ...' if len(matches) > 4 else ''}; "
                f"{count} expected): a shard missing would read it short, one too many twice"
            )
    return [os.path.join(folder, m.string) for m in matches]


def near_miss(path: str) -> str:
    """Why a path that does not exist may have been meant as one that does, as " (...)" ("" when nothing is near): a
    file named with a trailing ``/`` or ``/.``, or a name copied with white space around it (a review met "no such
    file or directory", and for a name with a space, a Hub id's network error, though the file is there), or the
    prefix of a Megatron index or the stem of a datatrove ``.ds``.
    """
    bare = path
    while bare.endswith(("/", os.sep, "/.")) and len(bare) > 1:
        bare = bare[:-2] if bare.endswith("/.") else bare[:-1]
    if bare != path and os.path.isfile(bare):
        return f" ({bare} is a file, not a folder: drop the trailing {path[len(bare) :]!r})"
    if path != path.strip() and os.path.lexists(path.strip()):
        return f" (the name has white space around it; {path.strip()!r} exists)"
    stem = path.strip()
    if os.path.isfile(stem + ".idx"):  # Megatron's data_path names prefixes (a review: told to drop --eos-id)
        return f" (a Megatron prefix: give its index, {stem}.idx)"
    if os.path.isfile(stem + ".ds"):
        return f" (a datatrove file: give {stem}.ds)"
    return ""


def not_the_datasets_data(path: str, kept: dict[str, set[str] | None] | None = None) -> bool:
    """Whether ``path`` is an Arrow file that ``datasets`` keeps beside a split's data but does not read as it:
    in a saved split's folder, one its ``state.json`` does not list (``.map()``'s ``cache-*.arrow``); in a
    ``datasets`` cache folder, a ``.map()`` result. A glob passes them over, as the folder's walk does (a review's
    ``saved/train/*.arrow`` read a mapped copy beside the 20 documents: 40). ``kept`` remembers each folder's answer
    (:func:`_data_names`) across the files of one glob: read once per folder, not once per file.
    """
    if not path.endswith(".arrow"):
        return False
    folder = os.path.dirname(path) or "."
    kept = {} if kept is None else kept
    if folder not in kept:
        kept[folder] = _data_names(folder)
    names = kept[folder]
    return names is not None and os.path.basename(path) not in names


def _data_names(folder: str) -> set[str] | None:
    """The names of the Arrow files ``datasets`` reads as data in ``folder``: a saved split's listed files, a
    ``datasets`` cache's files other than ``.map()`` results; None for any other folder (every file is data).
    """
    if os.path.isfile(os.path.join(folder, "state.json")) and os.path.isfile(os.path.join(folder, "dataset_info.json")):
        try:
            return {os.path.basename(file) for file in saved_dataset_files(folder, "")}
        except FreqlabError:  # metadata not readable: the files are read as the glob says
            return None
    if is_datasets_cache(folder):
        return {e for e in os.listdir(folder) if e.endswith(".arrow") and not e.startswith("cache-")}
    return None


def _read_json(path: str) -> object:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise FreqlabError(f"{path}: cannot read saved-dataset metadata ({exc})") from exc


class FileFinder:
    """Expands specs into :class:`FoundFiles`; ``format_of(path)`` names a file's format (None: unknown).

    ``only`` (a format name) restricts what is read to that format: a file named explicitly is read in it
    whatever its name; a file met in a folder or matched by a glob is read when that format claims it, or (a
    glob) when no format does; files of other formats are passed over and counted in ``other_formats``.
    """

    def __init__(self, format_of, split: str = "train", only: str | None = None) -> None:
        self.format_of = format_of
        self.split = split
        self.only = only
        self.found = FoundFiles()
        self._data_names: dict[str, set[str] | None] = {}  # per folder, for not_the_datasets_data

    def _chosen(self, path: str, fmt: str | None, matched: bool) -> str | None:
        """The format ``path`` is read in (None: passed over), under ``only``; ``matched``: by a glob."""
        if self.only is None or fmt == self.only:
            return fmt
        if fmt is None:
            return self.only if matched else None
        self.found.other_formats[fmt] = self.found.other_formats.get(fmt, 0) + 1
        return None

    def expand(self, spec: str) -> None:
        """Add the files ``spec`` names: a file, a folder or a glob pattern."""
        path = expand_home(spec)
        if glob.has_magic(path) and not os.path.lexists(path):  # a folder named data[1] is that folder
            self.found.patterns += glob_anchor(spec)
            matches = sorted(glob.glob(path, recursive=True))
            if not matches:
                raise FreqlabError(f"{spec}: no files match this pattern")
            start = len(self.found.files)
            for match in matches:
                self._visit(match, matched=True)
            if any(os.path.isdir(match) for match in matches):  # folders matched are walked whole: said, as above
                parts = Path(path).parts
                fixed = _first_wildcard(parts)
                self._note_splits(os.path.join(*parts[:fixed]) if fixed else ".", start)
        elif os.path.isdir(path):
            start = len(self.found.files)
            self._walk(path)
            self._note_splits(path, start)
        elif os.path.exists(path):
            if not is_regular(path):
                raise FreqlabError(f"{spec}: not a regular file (a FIFO, socket or device cannot be scanned)")
            fmt = self.only or self.format_of(path)
            if fmt is None:
                return self._unknown(spec)
            self.found.add(path, fmt)
        else:
            raise FreqlabError(f"{spec}: no such file or directory{near_miss(path)}")

    def _note_splits(self, folder: str, start: int) -> None:
        """Record, when the files the walk of ``folder`` found (from ``start`` on) are named for several splits as
        ``datasets`` names them (:func:`split_named`), how many of each: they are all read (a folder is read whole),
        and the report says so, since a local copy of a dataset repository adds its splits up.
        """
        named = Counter(split_named(os.path.relpath(path, folder)) for path, _ in self.found.files[start:])
        named.pop(None, None)
        if len(named) > 1:
            for split, files in named.items():
                self.found.splits_named[split] = self.found.splits_named.get(split, 0) + files

    def _unknown(self, spec: str) -> None:
        from freqlab.corpus.megatron import beside  # here: megatron imports this module

        index = beside(spec, ".idx") if spec.lower().endswith(".bin") else None
        if index is not None:  # Megatron's tokens: its index is the corpus
            raise FreqlabError(f"{spec}: the tokens of a Megatron dataset; give its index, {index}")
        raise FreqlabError(f"{spec}: unknown file format; supported: {supported()}")

    def _visit(self, path: str, matched: bool = False) -> None:
        """Add a file of a known format, walk a folder, pass over (and count) any other file."""
        if os.path.isdir(path):
            self._walk(path)
        elif not is_regular(path):
            self.found.not_regular.append(path)
            if os.path.islink(path) and not os.path.exists(path):  # walked once its target is made
                self.found.link_targets.append(os.path.realpath(path))
        elif matched and not_the_datasets_data(path, self._data_names):
            self.found.ignored.append(path)
        elif (fmt := self._chosen(path, self.format_of(path), matched)) is not None:
            self.found.add(path, fmt)
        else:
            self.found.ignored.append(path)

    def _walk(self, folder: str) -> None:
        if not self.found.enter(folder):
            return
        if is_scan_output(folder):  # its summary.json and checkpoints would be read as JSON lines, one bad line
            raise FreqlabError(
                f"{folder}: the output folder of a freqlab scan (lengths.parquet, summary.json, checkpoints/), not"
                " corpus data: leave it out of the dataset's folders and patterns"
            )
        saved = is_saved_dataset(folder)
        cache = not saved and is_datasets_cache(folder)
        if saved or cache:
            self.found.split_used |= cache or os.path.isfile(os.path.join(folder, "dataset_dict.json"))
            files = datasets_cache_files(folder, self.split) if cache else saved_dataset_files(folder, self.split)
            for path in files:
                if self._chosen(path, "arrow", False) is None:
                    self.found.ignored.append(path)
                else:
                    self.found.add(path, "arrow")
            # Arrow files beside the ones read (a cache's other splits and .map() results; a saved dataset's files
            # its state.json does not list, which datasets does not read either): passed over, and counted
            chosen = set(files)
            for place in {os.path.dirname(path) for path in files} | ({folder} if cache else set()):
                others = (os.path.join(place, e) for e in sorted(os.listdir(place)) if e.endswith(".arrow"))
                self.found.ignored += [path for path in others if path not in chosen]
            if not cache and os.path.isfile(os.path.join(folder, "dataset_dict.json")):  # its other splits: the same
                splits = saved_splits(os.path.join(folder, "dataset_dict.json"))
                for other in (s for s in splits if s != self.split):
                    try:
                        self.found.ignored += saved_dataset_files(folder, other)
                    except FreqlabError:  # a split not read need not be readable: it is not counted, that's all
                        continue
            return
        try:
            entries = sorted(os.listdir(folder))
        except OSError as exc:
            raise FreqlabError(f"{folder}: cannot list folder ({exc.strerror or exc})") from exc
        self.found.hidden += [os.path.join(folder, e) for e in entries if e.startswith(".")]
        entries = [e for e in entries if not e.startswith(".")]
        for entry in entries:
            self._visit(os.path.join(folder, entry))


def is_scan_output(folder: str) -> bool:
    """Whether ``folder`` is where a freqlab scan wrote its outputs: its ``checkpoints/manifest.json`` is freqlab's
    (the keys :data:`~freqlab.formats.MANIFEST_KEYS`, a fingerprint and its hash:
    :func:`~freqlab.formats.manifest_fingerprint`).
    """
    from freqlab.formats import CHECKPOINT_MANIFEST, CHECKPOINTS_DIR, MANIFEST_KEYS, manifest_fingerprint

    manifest = os.path.join(folder, CHECKPOINTS_DIR, CHECKPOINT_MANIFEST)
    if not os.path.isfile(manifest) or os.path.getsize(manifest) > 1 << 20:
        return False
    try:
        with open(manifest, encoding="utf-8") as handle:
            found = json.load(handle)
        manifest_fingerprint(found)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return set(found) == set(MANIFEST_KEYS)


def find_files(
    specs: list[str], format_of, split: str = "train", config: str | None = None, only: str | None = None
) -> FoundFiles:
    """The data files of paths, folders and globs (``only``: of that format, see :class:`FileFinder`); raises
    when nothing is found.

    ``config`` and a ``split`` other than ``"train"`` mean nothing for local files (``split`` only chooses the
    subset of a saved DatasetDict): rather than ignore them silently, that raises.
    """
    finder = FileFinder(format_of, split, only)
    for spec in specs:
        finder.expand(spec)
    found = finder.found
    # a file passed over is counted once, however often it was met ('g/**' matches g/notes.md and the folder g, whose
    # walk meets it again; a symlink loop meets it at every depth: a review counted 84 for 2 files)
    for name in ("ignored", "not_regular"):
        once = {os.path.realpath(path): path for path in reversed(getattr(found, name))}
        setattr(found, name, list(reversed(once.values())))
    if not found.files:
        if only is not None:
            others = ", ".join(f"{n} {fmt}" for fmt, n in sorted(found.other_formats.items()))
            raise FreqlabError(f"{', '.join(specs)}: no {only} files found" + (f" (only {others})" if others else ""))
        passed = [os.path.basename(path) for path in found.ignored[:3]]  # what was there instead
        there = f"; passed over {len(found.ignored):,}: {first_few(passed, total=len(found.ignored))}" if passed else ""
        raise FreqlabError(f"{', '.join(specs)}: no data files found (supported: {supported()}){there}")
    shown = " ".join(specs)
    if config is not None:
        raise ParameterError(
            f"{shown}: --config {config!r} applies to Hugging Face datasets, not to local files", "--config"
        )
    if split != "train" and not found.split_used:
        raise ParameterError(
            f"{shown}: --split {split!r} applies to Hugging Face datasets, saved DatasetDict folders and the "
            "datasets cache's folders; local files are read whole (drop --split, or point at the split's files)",
            "--split",
        )
    return found


def stat_file(path: str, file_id: str) -> DataFile:
    """A :class:`DataFile` for ``path``, made absolute (workers, e.g. on Ray nodes, run in other folders;
    symlinks are kept, so messages name the file as found); FreqlabError when it cannot be opened for reading.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise FreqlabError(f"{path}: cannot open for reading ({exc.strerror or exc})") from exc
    try:
        info = os.fstat(descriptor)
    finally:
        os.close(descriptor)
    return DataFile(os.path.abspath(path), file_id, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def relative_ids(paths: list[str]) -> tuple[str, dict[str, str]]:
    r"""The common root folder of ``paths`` and each path's id relative to it (``/``-separated).

    A file name that is not valid UTF-8 keeps its undecodable bytes as ``\xNN`` escapes in the id, so ids are
    always printable and hashable as UTF-8.
    """
    root = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])

    def rel(path: str) -> str:
        relative = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
        return os.fsencode(relative).decode("utf-8", "backslashreplace")

    return root, {path: rel(path) for path in paths}
