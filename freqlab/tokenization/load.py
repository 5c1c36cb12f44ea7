"""``load_tokenizer``: one entry point for every way of naming a tokenizer."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from freqlab.errors import FreqlabError
from freqlab.paths import expand_home
from freqlab.tokenization.builtin import BUILTIN_TOKENIZERS, DEFAULT_TOKENIZER, builtin_path, load_builtin
from freqlab.tokenization.cache import cache_dir, cache_key, cached_load
from freqlab.tokenization.counter import TokenCounter
from freqlab.tokenization.hf import hub_hint, load_hub_tokenizer, load_tokenizer_json
from freqlab.tokenization.sentencepiece import load_sentencepiece_file
from freqlab.tokenization.tiktoken_file import is_tiktoken_file, load_tiktoken_file
from freqlab.tokenization.verify import fastokens_rule as rule_context
from freqlab.tokenization.verify import skipped_backends, skipping

# owner/name[@revision] (or a bare legacy name like "gpt2"): letters, digits, "-", "_", "."
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?(@[\w./-]+)?$")


def load_tokenizer(
    spec: str | None = None,
    *,
    add_special_tokens: bool = False,
    verify_texts: Sequence[str] | None = None,
    pattern: str | None = None,
    threads: int = 1,
    skip_backends: Mapping[str, str] | None = None,
    fastokens_rule: Callable[[str], str | None] | None = None,
) -> TokenCounter:
    """Load a token counter.

    ``spec`` is, in order of precedence:

    * ``None``: the default built-in, ``"tekken"`` (Mistral Tekken, from ``mistral-common``);
    * a built-in name (``BUILTIN_TOKENIZERS``): ``tekken``, ``tekken-240911``, ``tekken-240718``;
    * an existing path: a ``.tiktoken`` ranks file (regex ``pattern``, default cl100k's; also a ``.model`` file
      in that format, like Llama 3's ``tokenizer.model``), a SentencePiece ``.model`` file, a Tekken JSON
      (``tekken*.json`` with a ``config.pattern``), a Hugging Face ``tokenizer.json``, or a folder holding one;
    * otherwise a Hugging Face model id, ``org/name[@revision]`` (needs the hub or its local cache).

    ``add_special_tokens`` counts the tokens a document gets in pretraining: BOS+EOS for Tekken, the
    post-processor's tokens for Hugging Face tokenizers. ``verify_texts`` are the texts a ``tokenizer.json``
    faster backend must count identically to the reference (default:
    :func:`~freqlab.tokenization.sample.default_verify_texts`). ``threads`` only matters on the Hugging Face backend
    (see :class:`TokenCounter`). ``skip_backends`` (``{"fastokens": "why"}``) leaves a faster backend out
    without building or verifying it (the reason goes to ``counter.fallback_reasons``): fastokens costs
    seconds to build and verify, repaid only on scans of more than some 100 MB. ``fastokens_rule`` decides that
    once the other backends are verified: called with the one that would count without fastokens, it returns
    the reason to leave fastokens out (built and verified only when it returns None); the scan driver's rule
    compares the scan's size with that backend's measured speed (:func:`freqlab.scan.driver.small_scan_rule`).

    The counter is picklable (see :mod:`freqlab.tokenization.counter`); ``load_tokenizer(counter.spec, ...)``
    re-creates it too.

    >>> counter = load_tokenizer()
    >>> counter.name, counter.backend, counter.vocab_size
    ('tekken', 'fastokens', 131072)
    >>> counter.count(["The quick brown fox."]).tolist()
    [5]
    """
    if skip_backends or fastokens_rule is not None:
        with skipping(skip_backends or {}), rule_context(fastokens_rule):
            return load_tokenizer(
                spec, add_special_tokens=add_special_tokens, verify_texts=verify_texts, pattern=pattern, threads=threads
            )
    route = _cached_route(spec, add_special_tokens, verify_texts, pattern, threads)
    if pattern is not None and (route is None or route[1].get("kind") != "tiktoken"):  # else silently unused
        raise FreqlabError(f"{spec}: pattern= is for tiktoken ranks files (.tiktoken, Llama 3's tokenizer.model) only")
    if route is not None:
        file, options, load, settings, texts = route
        return cached_load(file, options, load, settings=settings, verify_texts=texts)
    return load_hub_tokenizer(spec, add_special_tokens=add_special_tokens, verify_texts=verify_texts, threads=threads)


def cache_entry(spec: str | None = None, *, add_special_tokens: bool = False) -> Path | None:
    """The on-disk cache entry (:mod:`freqlab.tokenization.cache`) that ``load_tokenizer(spec,
    add_special_tokens=...)`` would read, if it exists: None for a hub id, a missing file, the cache off, or a
    tokenizer never loaded with these options. Costs the file's sha256 (~30 ms for Llama 3's 9 MB).
    """
    try:
        route = _cached_route(spec, add_special_tokens, None, None, 1)
        folder = cache_dir()
        if route is None or folder is None:
            return None
        path = folder / f"{cache_key(route[0], route[1])}.pickle"
    except (FreqlabError, OSError):
        return None
    return path if path.is_file() else None


FOLDER_FILES = ("tokenizer.json", "tekken.json", "tokenizer.model")  # what a model folder's tokenizer is, in order


def tokenizer_in_folder(folder: Path) -> Path:
    """The tokenizer file of a model folder: the first of :data:`FOLDER_FILES` it holds (Hugging Face's
    ``tokenizer.json`` before Mistral's ``tekken.json`` and SentencePiece's ``tokenizer.model``, as
    ``transformers`` prefers the fast tokenizer); FreqlabError naming the folder when it holds none.
    """
    for name in FOLDER_FILES:
        file = folder / name
        if file.exists():
            return file
        if file.is_symlink():  # a cache snapshot without its blob: never passed over for the next file (a review)
            raise FreqlabError(
                f"{file}: a broken link (to {os.readlink(file)}): the folder's tokenizer file is missing"
            )
    raise FreqlabError(f"{folder}: a folder without a tokenizer file ({', '.join(FOLDER_FILES)}); pass the file itself")


def _cached_route(
    spec: str | None,
    add_special_tokens: bool,
    verify_texts: Sequence[str] | None,
    pattern: str | None,
    threads: int,
) -> tuple[Path, dict, Callable[[], TokenCounter], dict[str, str], Sequence[str] | None] | None:
    """How :func:`load_tokenizer` loads ``spec`` through the cache: (file, cache options, loader, settings,
    verification texts); None for a hub id. Raises FreqlabError for a path that names no tokenizer.
    """
    if spec is None:
        spec = DEFAULT_TOKENIZER
    options = {"add_special_tokens": bool(add_special_tokens), "skipped": skipped_backends()}
    if spec in BUILTIN_TOKENIZERS:
        return (
            builtin_path(spec),
            {**options, "builtin": spec},
            lambda: load_builtin(spec, add_special_tokens=add_special_tokens),
            {"name": spec, "spec": spec},
            None,
        )
    path = Path(expand_home(spec))
    if path.is_dir():
        path = tokenizer_in_folder(path)
    if path.exists():
        model_file = ".model" in path.suffixes  # tokenizer.model, mistral's tokenizer.model.v1
        file = path
        if file.exists() and not file.is_file():  # a FIFO blocked the hash for good, /dev/zero filled memory (a review)
            what = "a folder" if file.is_dir() else "a FIFO, socket or device"
            raise FreqlabError(f"{file}: not a regular file ({what}): a tokenizer is read from a file")
        settings = {"name": str(file), "spec": str(file)}
        if path.suffix == ".tiktoken" or (model_file and is_tiktoken_file(path)):
            return (
                file,
                # the name decides the default regex (.tiktoken: cl100k's; Llama 3's ranks as .model: theirs), so the
                # same bytes under both names are two loads (a review: the second was the first's cache hit)
                {**options, "kind": "tiktoken", "pattern": pattern, "model_file": model_file},
                lambda: load_tiktoken_file(path, pattern=pattern, add_special_tokens=add_special_tokens),
                settings,
                None,
            )
        if model_file:
            return (
                file,
                {**options, "kind": "sentencepiece", "verify_texts": verify_texts},
                lambda: load_sentencepiece_file(path, add_special_tokens=add_special_tokens, verify_texts=verify_texts),
                settings,
                verify_texts,
            )
        return (
            file,
            {**options, "kind": "json", "verify_texts": verify_texts, "threads": threads},
            lambda: load_tokenizer_json(
                path, add_special_tokens=add_special_tokens, verify_texts=verify_texts, threads=threads
            ),
            settings,
            verify_texts,
        )
    if (
        path.suffix in {".json", ".tiktoken", ".model"}
        or ".model" in path.suffixes
        or spec.startswith((".", "/", "~"))
        or "\\" in spec
    ):
        raise FreqlabError(f"{spec}: no such tokenizer file")
    if not _HUB_ID.match(spec):
        raise FreqlabError(f"tokenizer {spec!r}: not a file, a built-in or a hub id; {hub_hint(spec)}")
    return None
