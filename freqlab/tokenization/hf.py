"""Hugging Face tokenizers: ``tokenizer.json`` files and hub model ids, on fastokens or tiktoken when exact.

Candidates: fastokens on the same JSON, and tiktoken on the plan
:func:`~freqlab.tokenization.bytelevel.compile_bytelevel_bpe` builds for byte-level BPE; both are compared with
Hugging Face at load (:mod:`freqlab.tokenization.verify`) and kept only if they count every sample text alike.

Hub ids are resolved with the hub code of ``tokenizers``/``huggingface_hub``: a cached ``tokenizer.json`` is
used without any network access; otherwise, unless ``HF_HUB_OFFLINE`` is set, the hub endpoint
(``HF_ENDPOINT``) is probed with a 3 s TCP connect (DNS lookup included) before ``Tokenizer.from_pretrained``
runs, so an offline machine fails in seconds with one line instead of ~23 s of retries.
"""

from __future__ import annotations

import difflib
import json
import os
import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from freqlab.errors import FreqlabError
from freqlab.tokenization.backends import (
    BACKEND_FASTOKENS,
    BACKEND_HF,
    BACKEND_TIKTOKEN,
    HfEngine,
    hf_tokenizer_from_str,
    is_engine_failure,
)
from freqlab.tokenization.builtin import (
    BUILTIN_TOKENIZERS,
    is_tekken_data,
    read_tokenizer_bytes,
    tekken_from_data,
)
from freqlab.tokenization.bytelevel import (
    NotConvertible,
    added_contents,
    compile_bytelevel_bpe,
    split_out_contents,
    token_bytes,
)
from freqlab.tokenization.counter import TokenCounter, _first_line, vocab_hash
from freqlab.tokenization.presets import PresetChoice, choose_preset
from freqlab.tokenization.sample import default_verify_texts
from freqlab.tokenization.verify import fastokens_candidate, verified

HUB_CONNECT_TIMEOUT_S = 3.0
# post-processors fastokens (0.3) cannot read: RoBERTa's, BART's, Longformer's, BERT's. It counts without special
# tokens, where a post-processor adds nothing, so it is given the file without one (and verified like any candidate)
POST_PROCESSORS_FASTOKENS_LACKS = frozenset({"RobertaProcessing", "BertProcessing"})


def load_tokenizer_json(
    path: str | Path,
    *,
    add_special_tokens: bool = False,
    verify_texts: Sequence[str] | None = None,
    threads: int = 1,
    name: str | None = None,
    spec: str | None = None,
) -> TokenCounter:
    """A counter for a Hugging Face ``tokenizer.json`` or a Tekken JSON (a model folder's file:
    :func:`~freqlab.tokenization.load.tokenizer_in_folder`).
    """
    path = Path(path)
    try:
        json_text = read_tokenizer_bytes(path).decode("utf-8")  # a .zst file decompressed
    except (OSError, UnicodeDecodeError) as exc:
        raise FreqlabError(f"{path}: cannot read tokenizer file ({exc.__class__.__name__}: {exc})") from exc
    try:
        config = json.loads(json_text)
    except ValueError as exc:
        raise FreqlabError(f"{path}: not a Hugging Face tokenizer.json (not JSON: {exc})") from exc
    if is_tekken_data(config):
        return tekken_from_data(config, path, name=name, spec=spec, add_special_tokens=add_special_tokens)
    return tokenizer_from_json_text(
        json_text,
        config=config,
        origin=str(path),
        name=name or str(path),
        spec=spec or str(path),
        add_special_tokens=add_special_tokens,
        verify_texts=verify_texts,
        threads=threads,
    )


def tokenizer_from_json_text(
    json_text: str,
    *,
    origin: str,
    name: str,
    spec: str,
    add_special_tokens: bool = False,
    verify_texts: Sequence[str] | None = None,
    threads: int = 1,
    config: Any = None,
    salad: Sequence[bytes] | None = None,
) -> TokenCounter:
    """Build a counter for ``tokenizer.json`` text (``config``: its parsed JSON, if the caller has it).

    Candidates: fastokens on the same JSON, tiktoken on the compiled plan (byte-level BPE only); reference:
    Hugging Face. ``origin`` (path or hub id) names the tokenizer in errors; ``salad``: the vocabulary's tokens
    as text bytes for :func:`~freqlab.tokenization.sample.vocab_salad` (default: read from the JSON).
    """
    try:
        if config is None:
            config = json.loads(json_text)
        if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
            raise ValueError("no 'model' object")
        tokenizer = hf_tokenizer_from_str(json_text)
    except BaseException as exc:  # JSONDecodeError, ValueError, tokenizers' Exception or panic: all a bad file
        if not is_engine_failure(exc):
            raise
        raise FreqlabError(f"{origin}: not a Hugging Face tokenizer.json ({_first_line(exc)})") from exc
    dropout = config["model"].get("dropout")
    if dropout:  # the reference itself is random: no count is exact, none repeats
        raise FreqlabError(
            f"{origin}: BPE dropout {dropout}: Hugging Face drops merges at random, so a text's count changes from "
            'call to call; set "dropout": null in the model to count the tokenizer without it'
        )
    sources: dict[str, Any] = {BACKEND_HF: json_text}
    refusals: dict[str, str] = {}
    choice = PresetChoice(json_text)

    def fastokens_source() -> str:  # the preset's spelling when the file's regex behaves like it
        nonlocal choice
        own, text = config, json_text
        if _post_processor_types(config.get("post_processor")) & POST_PROCESSORS_FASTOKENS_LACKS:
            own = {**config, "post_processor": None}
            text = json.dumps(own, ensure_ascii=False)
        choice = choose_preset(own, text, verify_texts if verify_texts is not None else default_verify_texts())
        return choice.json_text

    version = fastokens_candidate(sources, refusals, fastokens_source)
    if choice.refusal is not None:  # the normalizer writes what fastokens' preset would split otherwise
        del sources[BACKEND_FASTOKENS]
        refusals[BACKEND_FASTOKENS], version = choice.refusal, None
    try:
        sources[BACKEND_TIKTOKEN] = compile_bytelevel_bpe(config, tokenizer)
    except NotConvertible as exc:
        refusals[BACKEND_TIKTOKEN] = str(exc)
    candidate = TokenCounter(
        name=name,
        spec=spec,
        vocab_size=tokenizer.get_vocab_size(with_added_tokens=True),
        vocab_hash=_hf_vocab_hash(tokenizer),
        sources=sources,
        routed=added_contents(config),
        fastokens_routed=choice.routed,
        split_out=split_out_contents(config),
        add_special_tokens=add_special_tokens,
        special_tokens_added=_special_tokens_per_document(tokenizer) if add_special_tokens else 0,
        threads=threads,
        fastokens_version=version,
        fastokens_note=choice.note,
    )
    candidate._engines.put(BACKEND_HF, HfEngine(json_text, tokenizer))  # parse the JSON once
    if salad is None:
        salad = _vocab_text_bytes(config)
    return verified(candidate, refusals=refusals, verify_texts=verify_texts, salad_tokens=salad)


def _vocab_text_bytes(config: dict[str, Any]) -> list[bytes]:
    """The model vocabulary as text bytes, in id order: byte-level tokens decoded, ``▁`` as a space."""
    vocab = (config.get("model") or {}).get("vocab") or {}
    if isinstance(vocab, dict):
        items = sorted(vocab.items(), key=lambda kv: kv[1])
    else:  # Unigram: a list of [piece, score]
        items = [(entry[0], i) for i, entry in enumerate(vocab)]
    out = []
    for token, _ in items:
        try:
            out.append(token_bytes(token))
        except KeyError:
            out.append(str(token).replace("\u2581", " ").encode("utf-8", "surrogatepass"))
    return out


def _special_tokens_per_document(tokenizer: Any) -> int:
    """Tokens the post-processor adds around one sequence (0 without a post-processor)."""
    processor = tokenizer.post_processor
    return int(processor.num_special_tokens_to_add(False)) if processor is not None else 0


def _post_processor_types(processor: Any) -> set[str]:
    """The types of a ``tokenizer.json``'s post-processor and of those a ``Sequence`` of them holds."""
    if not isinstance(processor, dict):
        return set()
    types = {str(processor.get("type"))}
    for inner in processor.get("processors") or ():
        types |= _post_processor_types(inner)
    return types


def _hf_vocab_hash(tokenizer: Any) -> str:
    """Vocabulary hash over (id, bytes): byte-level tokens as their bytes, others (and added tokens) as UTF-8.

    Model vocabulary and added tokens are listed separately: an added ``<s>`` may share its text with an
    ordinary token of another id. A byte-level export of a tiktoken vocabulary hashes like the original.
    """
    entries = []
    for token, token_id in tokenizer.get_vocab(with_added_tokens=False).items():
        try:
            raw = token_bytes(token)
        except KeyError:
            raw = token.encode("utf-8", "surrogatepass")
        entries.append((token_id, raw))
    model_ids = {token_id for token_id, _ in entries}
    for token_id, added in tokenizer.get_added_tokens_decoder().items():
        if token_id not in model_ids:
            entries.append((token_id, added.content.encode("utf-8", "surrogatepass")))
    return vocab_hash(entries)


# -- hub ---------------------------------------------------------------------------------------------------


def load_hub_tokenizer(
    model_id: str,
    *,
    add_special_tokens: bool = False,
    verify_texts: Sequence[str] | None = None,
    threads: int = 1,
) -> TokenCounter:
    """A counter for a hub model id (``org/name`` or ``org/name@revision``), failing fast when offline."""
    repo_id, _, revision = model_id.partition("@")
    options: dict[str, Any] = {
        "add_special_tokens": add_special_tokens,
        "verify_texts": verify_texts,
        "threads": threads,
        "name": model_id,
        "spec": model_id,
    }
    cached = _cached_tokenizer_json(repo_id, revision or None)
    if cached is not None:
        return load_tokenizer_json(cached, **options)
    reason = _hub_unreachable_reason()
    if reason is not None:
        raise FreqlabError(f"tokenizer {model_id!r}: Hugging Face hub unavailable, {reason}; {hub_hint(model_id)}")
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_pretrained(repo_id, revision=revision or "main", token=os.environ.get("HF_TOKEN"))
    except Exception as exc:
        raise FreqlabError(f"tokenizer {model_id!r}: {_first_line(exc)}; {hub_hint(model_id)}") from exc
    return tokenizer_from_json_text(tokenizer.to_str(), origin=model_id, **options)


HUB_HINT = f"pass a local tokenizer file or model folder, or a built-in name ({', '.join(BUILTIN_TOKENIZERS)})"


def hub_hint(spec: str) -> str:
    """:data:`HUB_HINT`, after "did you mean" a built-in whose name ``spec`` nearly spells (``Tekken``, ``tekkn``).

    >>> hub_hint("tekken_240911").split("?")[0]
    "did you mean 'tekken-240911'"
    """
    close = difflib.get_close_matches(spec.lower(), BUILTIN_TOKENIZERS, n=1)
    return f"did you mean {close[0]!r}? {HUB_HINT}" if close else HUB_HINT


def _cached_tokenizer_json(repo_id: str, revision: str | None) -> str | None:
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(repo_id, "tokenizer.json", revision=revision)
    except Exception:  # e.g. an invalid repo id: from_pretrained reports it
        return None
    return cached if isinstance(cached, str) else None


def _hub_unreachable_reason() -> str | None:
    """Why the hub cannot be used now (``HF_HUB_OFFLINE`` or no TCP connection within 3 s), or None."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}:
        return "HF_HUB_OFFLINE is set and it is not in the local cache"
    endpoint = urlsplit(constants.ENDPOINT)
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=HUB_CONNECT_TIMEOUT_S):
                outcome.append(None)
        except OSError as exc:
            outcome.append(f"cannot reach {host}:{port} ({exc.__class__.__name__}: {exc})")

    # A thread bounds the DNS lookup too (getaddrinfo ignores socket timeouts).
    thread = threading.Thread(target=probe, daemon=True, name="freqlab-hub-probe")
    thread.start()
    thread.join(HUB_CONNECT_TIMEOUT_S + 0.5)
    return outcome[0] if outcome else f"no answer from {host}:{port} within {HUB_CONNECT_TIMEOUT_S:.0f} s"
