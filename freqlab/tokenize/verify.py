"""Choose a counter's backends: compare each faster backend with the reference at load, keep those that agree.

The reference is the tokenizer's own implementation (Hugging Face for ``tokenizer.json``, tiktoken for Tekken
and ``.tiktoken`` ranks, ``sentencepiece`` for ``.model`` files). Each faster candidate (fastokens, tiktoken,
Hugging Face for a converted SentencePiece model) counts ``verify_texts`` (default:
:func:`~freqlab.tokenize.sample.default_verify_texts`) plus a seeded "vocabulary salad" of random tokens glued
together (:func:`~freqlab.tokenize.sample.vocab_salad`); any difference, or any failure to load or count,
refuses it, and ``counter.fallback_reasons`` says why. Texts containing routed strings are left out: the
counter sends those to the reference anyway.

Verification runs once, where the counter is loaded (the scan driver); workers receive the verified backend
list by pickle. In one process the outcome is remembered per (tokenizer data, texts), so loading the same
tokenizer again (notebooks, tests) does not rebuild and re-verify its engines.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from freqlab.errors import FreqlabError
from freqlab.tokenize.backends import (
    BACKEND_FASTOKENS,
    BACKEND_TIKTOKEN,
    FastokensRanks,
    TiktokenEngine,
    fastokens_version,
    is_engine_failure,
)
from freqlab.tokenize.counter import TiktokenPlan, TokenCounter, _first_line
from freqlab.tokenize.sample import default_verify_texts, vocab_salad

# backend -> why it is not even tried, for loads inside `skipping(...)` (load_tokenizer's skip_backends)
_SKIPPED: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("freqlab_skipped", default=None)


@contextlib.contextmanager
def skipping(backends: Mapping[str, str]) -> Iterator[None]:
    """Loads in this block do not build (or verify) these faster backends; ``backends``: name -> reason."""
    token = _SKIPPED.set(dict(backends))
    try:
        yield
    finally:
        _SKIPPED.reset(token)


_VERIFIED_LOCK = threading.Lock()
_VERIFIED: dict[tuple[str, str], tuple[tuple[str, ...], dict[str, str], TokenCounter]] = {}
_REMEMBERED = 8


def fastokens_candidate(sources: dict[str, Any], refusals: dict[str, str], source: Callable[[], Any]) -> str | None:
    """Add the fastokens source (``source()``: ``tokenizer.json`` text or a
    :class:`~freqlab.tokenize.backends.FastokensPreset`, made only when fastokens is importable); its version."""
    skipped = (_SKIPPED.get() or {}).get(BACKEND_FASTOKENS)
    if skipped is not None:
        refusals[BACKEND_FASTOKENS] = skipped
        return None
    version = fastokens_version()
    if version is None:
        refusals[BACKEND_FASTOKENS] = "not installed"
        return None
    sources[BACKEND_FASTOKENS] = source()
    return version


def verified(
    candidate: TokenCounter,
    *,
    refusals: Mapping[str, str],
    verify_texts: Sequence[str] | None,
    salad_tokens: Iterable[bytes] = (),
) -> TokenCounter:
    """``candidate`` restricted to the backends that count every verification text like its reference."""
    if len(candidate.backends) == 1:  # the reference alone: nothing to compare
        return candidate.with_backends(candidate.backends, dict(refusals))
    texts = list(verify_texts) if verify_texts is not None else default_verify_texts()
    texts += vocab_salad(list(salad_tokens))  # always: derived from the tokenizer itself
    routed = candidate._engines.routed
    if routed is not None:
        texts = [t for t in texts if not routed.search(t)]
    key = (candidate.fingerprint, hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest())
    with _VERIFIED_LOCK:
        remembered = _VERIFIED.get(key)
    if remembered is not None:
        backends, reasons, earlier = remembered
        counter = earlier.with_backends(backends, {**reasons, **refusals})
    else:
        backends, reasons = _compare(candidate, texts)
        counter = candidate.with_backends(backends, {**reasons, **refusals})
        with _VERIFIED_LOCK:
            if len(_VERIFIED) >= _REMEMBERED:
                del _VERIFIED[next(iter(_VERIFIED))]  # oldest first: its engines may hold hundreds of MB
            _VERIFIED[key] = (backends, reasons, counter)
    # the caller's settings (name, spec, special tokens, threads), the shared engines
    return TokenCounter(**{**counter._state(), **_settings(candidate)}, _engines=counter._engines)


def _settings(counter: TokenCounter) -> dict[str, Any]:
    return {
        "name": counter.name,
        "spec": counter.spec,
        "add_special_tokens": counter.add_special_tokens,
        "special_tokens_added": counter.special_tokens_added,
        "threads": counter.threads,
    }


def _compare(candidate: TokenCounter, texts: list[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    reference = candidate.reference
    try:
        expected = candidate.counts_by(reference, texts)
    except Exception as exc:
        raise FreqlabError(f"{candidate.name}: the {reference} reference fails on sample text ({exc})") from exc
    keep: list[str] = []
    reasons: dict[str, str] = {}
    for backend in candidate.backends[:-1]:
        try:
            got = candidate.counts_by(backend, texts)
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            reasons[backend] = f"failed to load or count sample text ({_first_line(exc)})"
            continue
        differ = (got != expected).nonzero()[0]
        if differ.size:
            i = differ[0]
            reasons[backend] = (
                f"verification: text #{i} ({texts[i][:40]!r}...) has {expected[i]} tokens, {backend} {got[i]}"
            )
        else:
            keep.append(backend)
    return (*keep, reference), reasons


def tiktoken_counter(
    plan: TiktokenPlan,
    *,
    verify_texts: Sequence[str] | None = None,
    tiktoken_engine: TiktokenEngine | None = None,
    **settings: Any,
) -> TokenCounter:
    """A counter for tiktoken ranks (Tekken, ``.tiktoken``): fastokens when it counts like tiktoken (on its own
    cl100k/o200k encoding when the pattern is that one, else with the plan's pattern), tiktoken (the reference)
    otherwise. ``settings``: TokenCounter's metadata; ``tiktoken_engine``: the plan's engine if the caller built
    it already."""
    from freqlab.tokenize.tiktoken_file import FASTOKENS_PRESETS

    sources: dict[str, Any] = {BACKEND_TIKTOKEN: plan}
    refusals: dict[str, str] = {}
    preset = FASTOKENS_PRESETS.get(plan.pat_str)
    version = fastokens_candidate(sources, refusals, lambda: FastokensRanks(plan, preset))
    candidate = TokenCounter(sources=sources, fastokens_version=version, **settings)
    if tiktoken_engine is not None:
        candidate._engines.put(BACKEND_TIKTOKEN, tiktoken_engine)
    return verified(candidate, refusals=refusals, verify_texts=verify_texts, salad_tokens=plan.mergeable_ranks)

