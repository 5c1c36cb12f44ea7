"""``open_corpus``: one entry point for every way of naming a corpus.

``dataset`` is resolved in this order:

1. None: local ``data_files`` if given, else the built-in corpus (the Python standard library).
2. A preset name (``slimpajama``...): with ``data_files``, local copies read with the preset's field mapping;
   without, the preset's Hub dataset streamed through ``datasets``.
3. A ``datasets`` packaged builder (``json``, ``parquet``, ``text``, ``arrow``, ``csv``...) with ``data_files``:
   the local files streamed through ``datasets`` (the native readers are faster; this path exists so the
   ``datasets`` streaming code runs, and is tested, offline).
4. A URL (``hf://datasets/...``, ``s3://``, ``gs://``, ``http(s)://``: :mod:`freqlab.corpus.remote_files`), an
   existing path, a glob, or anything that looks like a file name (``data.jsonl``): files, read by the same formats.
5. ``owner/name``: a Hugging Face Hub dataset (``config``, ``split``; ``data_files`` are then patterns inside
   the repository), probed first so an offline machine fails in seconds.
6. Anything else: an unknown preset (FreqlabError listing the presets).

``text_field`` / ``source_field`` override the mapping (default: text ``text``, no source label);
``source_field=""`` turns a preset's source label off. ``format`` (a name from
:mod:`freqlab.corpus.registry`) reads only local files of that format (see
:class:`~freqlab.corpus.file_discovery.FileFinder`); files whose lengths are in different units (text beside
tokenized data) are refused, never added (:func:`~freqlab.corpus.local_files.check_one_unit`).
"""

from __future__ import annotations

import dataclasses
import glob
import os

from freqlab.corpus.base import Corpus
from freqlab.corpus.builtin import builtin_corpus
from freqlab.corpus.fields import Fields, ReadOptions
from freqlab.corpus.file_discovery import near_miss, spec_reach
from freqlab.corpus.hub import PACKAGED_BUILDERS, streamed_corpus
from freqlab.corpus.local_files import local_corpus
from freqlab.corpus.presets import PRESETS, get_preset
from freqlab.corpus.registry import format_of
from freqlab.corpus.remote_files import is_url, local_path
from freqlab.errors import FreqlabError
from freqlab.paths import expand_home


def _as_list(data_files: str | list[str] | tuple[str, ...] | None) -> list[str] | None:
    if data_files is None:
        return None
    specs = [data_files] if isinstance(data_files, (str, os.PathLike)) else list(data_files)
    specs = [os.fspath(spec) for spec in specs]
    if not specs:
        raise FreqlabError("data_files is empty: give at least one file, folder or glob")
    return specs


def _looks_local(dataset: str) -> bool:
    """An existing path (a dangling symlink too), a glob, an explicit path (./ ../ / ~), a name with a data-file
    suffix, or one with more than one slash (a Hub id is owner/name).
    """
    return (
        os.path.lexists(expand_home(dataset))
        or dataset.count("/") > 1
        or glob.has_magic(dataset)
        or dataset.startswith((".", "/", "~", os.sep))
        or format_of(dataset.strip()) is not None  # a name copied with a space after it is no Hub id either
        or dataset.strip().lower().endswith((".gz", ".zst"))
    )


def open_corpus(
    dataset: str | os.PathLike[str] | list[str] | tuple[str, ...] | None = None,
    *,
    data_files: str | list[str] | None = None,
    config: str | None = None,
    split: str = "train",
    text_field: str | None = None,
    source_field: str | None = None,
    format: str | None = None,
    read: ReadOptions | None = None,
    tokens_field: str | None = None,
    length_field: str | None = None,
    eos_id: int | None = None,
) -> Corpus:
    """Open a corpus by preset name, Hub id, ``datasets`` builder, or local files/folders/globs.

    ``read`` says how tokenized data is read (token or length column, EOS id; see :class:`ReadOptions`).

    Parameters
    ----------
    dataset : str or list of str, optional
        A preset name, Hub id, ``datasets`` builder, or local file/folder/glob (a list: local files, as
        ``data_files``); default: the built-in corpus.
    data_files : str or list of str, optional
        Local copies (paths or globs) to read with ``dataset``'s fields.
    config, split : str
        Hub configuration and split.
    text_field, source_field : str, optional
        Record fields of the text and of the source label.
    format : str, optional
        Input format, instead of the one the file names imply.
    read : ReadOptions, optional
        How tokenized data is read (token or length column, EOS id).
    tokens_field, length_field, eos_id : optional
        The same options one by one, as :func:`freqlab.scan.scan` takes them (not together with ``read``).

    Returns
    -------
    Corpus
        The corpus, split into shards.

    Examples
    --------
    >>> corpus = open_corpus()                      # the Python standard library, offline
    >>> corpus.name, corpus.has_sources
    ('python-stdlib', True)

    Raises FreqlabError naming the path or id (missing path, empty glob, unknown preset, offline Hub...).
    """
    one_by_one = ReadOptions(tokens_field=tokens_field, length_field=length_field, eos_id=eos_id)
    if not one_by_one.is_default:
        if read is not None:
            raise TypeError("give read=ReadOptions(...) or tokens_field/length_field/eos_id, not both")
        read = one_by_one
    if dataset is not None and not isinstance(dataset, (str, os.PathLike)):  # a list of local paths
        if data_files is not None:
            raise FreqlabError("give local files either as dataset (a list of paths) or as data_files, not both")
        data_files = [os.fspath(path) for path in dataset]
        dataset = None
    specs = _as_list(data_files)
    if specs is not None:
        specs = [local_path(spec) for spec in specs]  # file:///data/x.jsonl is /data/x.jsonl
    if dataset is not None:
        dataset = local_path(os.fspath(dataset))
    if "-" in ([dataset] if specs is None else [dataset, *specs]) and not os.path.lexists("-"):
        # a scan reads its files in parts, on several workers, and again on resume: a stream cannot be
        raise FreqlabError(
            "'-' (standard input) is not read: write the stream to a file and scan that "
            "(e.g. `... > corpus.jsonl`; .gz and .zst files are read as they are)"
        )

    if text_field is not None and not text_field.strip("."):
        raise FreqlabError(
            f"text field {text_field!r} names no field; give the field that holds the text (default: text)"
        )

    def fields(default: Fields | None = None) -> Fields:
        default = default or Fields()
        source = default.source if source_field is None else (source_field or None)  # "": no source label
        return Fields(text_field or default.text, source, read or ReadOptions())

    if dataset is None:
        if specs is None:
            if text_field or source_field or (read is not None and not read.is_default):
                raise FreqlabError(
                    "text_field/source_field and tokenized-data options apply to a dataset or data files, "
                    "not the built-in corpus"
                )
            if config is not None or split != "train" or format is not None:  # each read nothing, unsaid
                raise FreqlabError("config, split and format apply to a dataset or data files, not the built-in corpus")
            return builtin_corpus()
        return local_corpus(specs, fields(), name=" ".join(specs), split=split, config=config, format=format)

    if dataset in PRESETS:
        preset = PRESETS[dataset]
        mapping = fields(preset.fields)
        info = {"kind": "preset", "preset": preset.name, "hub_id": preset.id}
        if specs is not None:
            return local_corpus(
                specs,
                mapping,
                name=f"{preset.name} ({_copies(specs)})",
                split=split,
                config=config,
                description=info,
                format=format,
            )
        if preset.id is None:
            raise FreqlabError(
                f"{preset.name}: this preset has no Hub dataset (local copies only); "
                f"use --dataset {preset.name} --data-files 'PATH/OR/GLOB'"
            )
        return streamed_corpus(
            preset.id,
            config=config if config is not None else preset.config,
            split=split or preset.split,
            data_files=None,
            fields=mapping,
            name=preset.id,
            description=info,
        )

    if dataset in PACKAGED_BUILDERS:
        corpus = streamed_corpus(
            dataset,
            config=config,
            split=split,
            data_files=specs,
            fields=fields(),
            name=f"{dataset} (local files via datasets)",
            description={},
        )
        folders, patterns = spec_reach(spec for spec in specs or () if not is_url(spec))
        return dataclasses.replace(corpus, folders=folders, patterns=patterns)  # for the --out check

    if dataset != dataset.strip() and (near := near_miss(expand_home(dataset))):  # not a preset or Hub id either
        raise FreqlabError(f"{dataset}: no such file or directory{near}")
    if is_url(dataset) or _looks_local(dataset):  # a URL (hf://, s3://, ...) is files too, never a Hub id
        if specs is not None:
            raise FreqlabError(f"{dataset}: give local data either as the dataset path or as data_files, not both")
        return local_corpus([dataset], fields(), name=dataset, split=split, config=config, format=format)

    if "/" in dataset:
        owner = dataset.split("/", 1)[0]
        local_owner = os.path.isdir(expand_home(owner))
        if local_owner and read is not None and read.eos_id is not None:  # token files named wrongly, not a Hub id
            raise FreqlabError(f"{dataset}: no such file or directory {_missing_under(dataset, owner)}")
        try:
            return streamed_corpus(
                dataset, config=config, split=split, data_files=specs, fields=fields(), name=dataset, description={}
            )
        except FreqlabError as exc:  # read as a Hub id; a review meant a local path under a folder that exists
            if not local_owner:
                raise
            raise FreqlabError(f"{exc}; nor is it a local path {_missing_under(dataset, owner)}") from None
    get_preset(dataset)  # raises: unknown preset, with suggestions
    raise AssertionError("unreachable")


def _copies(specs: list[str]) -> str:
    """How a preset's files were given: 'local files', 'remote files' or both."""
    remote = sum(is_url(spec) for spec in specs)
    return "local files" if not remote else "remote files" if remote == len(specs) else "local and remote files"


def _missing_under(dataset: str, owner: str) -> str:
    """Why ``dataset``, under the local folder ``owner``, is no local path: what it is near (:func:`near_miss`: the
    prefix of a Megatron index, ...), else ``(owner/ is a local folder without it)`` (a review: ``d/m --eos-id 2``,
    a Megatron prefix, was told to drop the EOS).
    """
    return near_miss(expand_home(dataset)).strip() or f"({owner}/ is a local folder without it)"
