"""Choose a counter's backends: compare each faster backend with the reference at load, keep those that agree.

The reference is the tokenizer's own implementation (Hugging Face for ``tokenizer.json``, tiktoken for Tekken
and ``.tiktoken`` ranks, ``sentencepiece`` for ``.model`` files). Each faster candidate (fastokens, tiktoken,
Hugging Face for a converted SentencePiece model) counts ``verify_texts`` (default:
:func:`~freqlab.tokenization.sample.default_verify_texts`) plus a seeded "vocabulary salad" of random tokens glued
together (:func:`~freqlab.tokenization.sample.vocab_salad`); any difference, or any failure to load or count,
refuses it, and ``counter.fallback_reasons`` says why. Texts containing routed strings are left out: the
counter sends those to the reference anyway (and those holding ``fastokens_routed`` strings, from fastokens'
comparison only: they go to the next backend, which is compared on them).

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
from pathlib import Path
from typing import Any

from freqlab.errors import FreqlabError
from freqlab.tokenization.backends import (
    BACKEND_FASTOKENS,
    BACKEND_TIKTOKEN,
    FASTOKENS_PRESETS,
    FastokensRanks,
    TiktokenEngine,
    fastokens_version,
    is_engine_failure,
)
from freqlab.tokenization.counter import TiktokenPlan, TokenCounter, _first_line, longest_match_regex
from freqlab.tokenization.presets import (
    ENCODING_ROUTED,
    MONGOLIAN_VOWEL_SEPARATOR,
    NEXT_BACKEND,
    SEPARATOR_PROBES,
    folded_routed,
    routing_note,
    script_refusal,
)
from freqlab.tokenization.sample import default_verify_texts, vocab_salad

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


# a rule for loads inside `fastokens_rule(...)`: the next backend's name -> why fastokens is left out, or None
def skipped_backends() -> dict[str, str]:
    """The backends left out by the enclosing :func:`skipping` block (name -> reason)."""
    return dict(_SKIPPED.get() or {})


_FASTOKENS_RULE: contextvars.ContextVar[Callable[[str], str | None] | None] = contextvars.ContextVar(
    "freqlab_fastokens_rule", default=None
)


@contextlib.contextmanager
def fastokens_rule(rule: Callable[[str], str | None] | None) -> Iterator[None]:
    """Loads in this block keep fastokens only if ``rule(next_backend)`` is None, where ``next_backend`` is the
    backend that counts without it (the fastest *other* verified one, known before fastokens is built); a
    string is the reason it is left out (e.g. a small scan that backend finishes before fastokens is ready).
    """
    token = _FASTOKENS_RULE.set(rule)
    try:
        yield
    finally:
        _FASTOKENS_RULE.reset(token)


# where verified() reports what it built and decided (the on-disk cache of freqlab.tokenization.cache reads it)
_CAPTURE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("freqlab_capture", default=None)


def read_loaded(path: str | Path) -> bytes:
    """A tokenizer file's bytes, as a load reads them; a load being captured (:func:`capturing`) notes their sha256
    in ``seen["read"]``, so that the cache keeps the counter only when they are the bytes its key hashed (a path
    switched to another file during the load and back, a symbolic link or a folder, left the file's own state as it
    was: a review).
    """
    data = Path(path).read_bytes()
    seen = _CAPTURE.get()
    if seen is not None:
        seen.setdefault("read", []).append(hashlib.sha256(data).hexdigest())
    return data


@contextlib.contextmanager
def capturing(seen: dict) -> Iterator[None]:
    """Loads in this block record in ``seen`` the last verification: ``state`` (the candidate counter's
    state, before verification), ``refusals``, ``salad`` (tokens) and ``verdicts`` (backend -> None or why).
    """
    token = _CAPTURE.set(seen)
    try:
        yield
    finally:
        _CAPTURE.reset(token)


_VERIFIED_LOCK = threading.Lock()
# (fingerprint, texts digest) -> (backend -> None when it agreed, else why not; the counter holding the engines)
_VERIFIED: dict[tuple[str, str], tuple[dict[str, str | None], TokenCounter]] = {}
_REMEMBERED = 8


def fastokens_candidate(sources: dict[str, Any], refusals: dict[str, str], source: Callable[[], Any]) -> str | None:
    """Add the fastokens source (``source()``: ``tokenizer.json`` text or a
    :class:`~freqlab.tokenization.backends.FastokensPreset`, made only when fastokens is importable); its version.
    """
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


def verification_texts(
    candidate: TokenCounter, verify_texts: Sequence[str] | None, salad_tokens: Iterable[bytes] = (), held: bool = False
) -> list[str]:
    """The texts every faster backend must count like the reference: ``verify_texts`` (default:
    :func:`~freqlab.tokenization.sample.default_verify_texts`) and the vocabulary salad, without routed texts
    (``held``: only those, which the split path must count like the reference).
    """
    texts = list(verify_texts) if verify_texts is not None else default_verify_texts()
    texts += vocab_salad(list(salad_tokens))  # always: derived from the tokenizer itself
    routed = set(candidate._engines.holding_routed(texts))
    if held:
        return [text for i, text in enumerate(texts) if i in routed]
    kept = [text for i, text in enumerate(texts) if i not in routed]
    if routed:  # the text around the routed strings, so that a common one (" ") leaves the backends something to count
        cut = longest_match_regex(candidate.routed).split
        pieces = [piece for i in sorted(routed) for piece in cut(texts[i]) if piece]
        still = set(candidate._engines.holding_routed(pieces))
        kept += [piece for k, piece in enumerate(pieces) if k not in still]
    return kept


def verified(
    candidate: TokenCounter,
    *,
    refusals: Mapping[str, str],
    verify_texts: Sequence[str] | None,
    salad_tokens: Iterable[bytes] = (),
    verdicts: Mapping[str, str | None] | None = None,
) -> TokenCounter:
    """``candidate`` restricted to the backends that count every verification text like its reference.

    fastokens is compared last: under a :func:`fastokens_rule` the other backends are verified first, and
    fastokens is neither built nor verified when the rule leaves it out for the fastest of them. ``verdicts``:
    outcomes already known (the on-disk cache's), not compared again; the texts are made only when one is missing.
    """
    salad_tokens = list(salad_tokens)
    seen = _CAPTURE.get()
    if seen is not None:
        seen.update(state=candidate._state(), refusals=dict(refusals), salad=salad_tokens, verdicts={})
    if len(candidate.backends) == 1:  # the reference alone: nothing to compare, nothing counted around tokens
        alone = candidate.with_backends(candidate.backends, dict(refusals))
        return TokenCounter(**{**alone._state(), "split_out": (), "fastokens_note": None}, _engines=alone._engines)
    known = dict(verdicts or {})
    if all(b in known for b in candidate.backends[:-1]):
        texts, key = [], (candidate.fingerprint, "known")
    else:
        texts = verification_texts(candidate, verify_texts, salad_tokens)
        key = (candidate.fingerprint, hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest())
    with _VERIFIED_LOCK:
        remembered = _VERIFIED.get(key)
    verdicts, holder = (dict(remembered[0]), remembered[1]) if remembered is not None else ({}, candidate)
    verdicts.update(known)
    if seen is not None:
        seen["verdicts"] = verdicts
    comparison = _Comparison(holder, texts, verdicts, lambda: verification_texts(candidate, verify_texts, salad_tokens))
    faster = candidate.backends[:-1]
    others = [b for b in faster if b != BACKEND_FASTOKENS]
    comparison.run(others)
    ruled: dict[str, str] = {}
    if BACKEND_FASTOKENS in faster:
        rule = _FASTOKENS_RULE.get()
        following = next((b for b in others if verdicts[b] is None), candidate.reference)
        why = rule(following) if rule is not None else None
        if why:
            ruled[BACKEND_FASTOKENS] = why
        else:
            comparison.run([BACKEND_FASTOKENS])
    keep = tuple(b for b in faster if b not in ruled and verdicts[b] is None)
    reasons = {b: why for b, why in verdicts.items() if why is not None and b in faster}
    counter = holder.with_backends((*keep, candidate.reference), {**reasons, **ruled, **refusals})
    split_out = candidate.split_out if keep else ()
    if split_out:  # texts holding added tokens counted around them by keep[0]: only if that agrees too
        split = SPLIT_VERDICT + keep[0]
        if split not in verdicts:
            held = verification_texts(candidate, verify_texts, salad_tokens, held=True)
            verdicts[split] = _split_verdict(counter, split_out, held)
        split_out = split_out if verdicts[split] is None else ()
    with _VERIFIED_LOCK:
        if key not in _VERIFIED and len(_VERIFIED) >= _REMEMBERED:
            del _VERIFIED[next(iter(_VERIFIED))]  # oldest first: its engines may hold hundreds of MB
        _VERIFIED[key] = (verdicts, holder)
    # the caller's settings (name, spec, special tokens, threads), the shared engines
    state = {**counter._state(), **_settings(candidate), "split_out": split_out}
    engines = counter._engines
    if keep[:1] != (BACKEND_FASTOKENS,):  # a note on how fastokens counts, where it does not
        state["fastokens_note"] = None
    else:
        if MONGOLIAN_VOWEL_SEPARATOR not in candidate.fastokens_routed:  # does fastokens split it as the regex does?
            if SEPARATOR_VERDICT not in verdicts:
                verdicts[SEPARATOR_VERDICT] = _separator_verdict(counter)
            if verdicts[SEPARATOR_VERDICT] is not None:
                state["fastokens_routed"] = (*candidate.fastokens_routed, MONGOLIAN_VOWEL_SEPARATOR)
                clause = f"{routing_note((MONGOLIAN_VOWEL_SEPARATOR,))} ({verdicts[SEPARATOR_VERDICT]})"
                state["fastokens_note"] = (state["fastokens_note"] or "fastokens: the file's regex") + clause
                engines = engines.routing_past_fastokens(state["fastokens_routed"])
        if state["fastokens_note"] and state["fastokens_routed"]:
            following = keep[1] if len(keep) > 1 else candidate.reference  # the note was written before the verdicts
            state["fastokens_note"] = state["fastokens_note"].replace(NEXT_BACKEND, following)
    return TokenCounter(**state, _engines=engines)


SPLIT_VERDICT = "split:"  # verdicts' key for the split path on a backend ("split:fastokens")
SEPARATOR_VERDICT = "separator:" + BACKEND_FASTOKENS  # whether fastokens counts texts holding U+180E as the reference


def _separator_verdict(counter: TokenCounter) -> str | None:
    """How fastokens counts :data:`~freqlab.tokenization.presets.SEPARATOR_PROBES` unlike the reference, or None."""
    texts = [t for t in SEPARATOR_PROBES if not counter.holding_fastokens_routed([t])]
    try:
        expected = counter.counts_by(counter.reference, texts)
        got = counter.counts_by(BACKEND_FASTOKENS, texts)
    except BaseException as exc:
        if not is_engine_failure(exc):
            raise
        return f"U+180E: fastokens fails on text holding it ({_first_line(exc)})"
    differ = (got != expected).nonzero()[0]
    if not differ.size:
        return None
    i = differ[0]
    return f"U+180E: fastokens counts {texts[i]!r} in {got[i]} tokens, {counter.reference} in {expected[i]}"


def split_texts(words: Sequence[str]) -> list[str]:
    """Texts holding added tokens where counting around them could go wrong: alone, glued to letters, digits,
    spaces, newlines, contractions and other scripts, two in a row, and before or after a part of one; for every
    one of ``words`` (a word left out could be the one whose flags or overlaps differ).
    """
    chosen = sorted(words)
    texts = []
    for k, word in enumerate(chosen):
        other = chosen[(k + 1) % len(chosen)]
        texts += [
            word,
            f"a{word}b",
            f" {word} ",
            f"Hello{word}world",
            f"x {word}\n\ny",
            word + word,
            word + other,
            f"it's{word}'s",
            f"123{word}456",
            f"é{word}ü 日本",
            f"\n{word}",
            f"{word} {word[:-1]}",
            word[1:] + word,
            f"{word}\r\n  \t{other}end",
        ]
    return texts


def _split_verdict(counter: TokenCounter, words: Sequence[str], held: Sequence[str] = ()) -> str | None:
    """None when counting around ``words`` (:meth:`TokenCounter._count_split`) on ``counter``'s backend gives the
    reference's count of every :func:`split_texts` text and of the verification texts ``held`` for holding a
    routed string, else why not (texts holding them then go to the reference).
    """
    trial = TokenCounter(**{**counter._state(), "split_out": tuple(words)}, _engines=counter._engines)
    texts = [*split_texts(words), *held]
    try:
        expected = counter.counts_by(counter.reference, texts)
        got = trial.count(texts) - trial.special_tokens_added
    except BaseException as exc:
        if not is_engine_failure(exc):
            raise
        return f"failed on sample text ({_first_line(exc)})"
    return _first_difference(texts, expected, got, "split")


def _first_difference(texts: Sequence[str], expected, got, who: str) -> str | None:
    """Why ``got`` is not the reference's ``expected`` (the first text that differs), or None when it is."""
    differ = (got != expected).nonzero()[0]
    if differ.size:
        i = differ[0]
        return f"verification: text #{i} ({texts[i][:40]!r}...) has {expected[i]} tokens, {who} {got[i]}"
    return None


def _settings(counter: TokenCounter) -> dict[str, Any]:
    return {
        "name": counter.name,
        "spec": counter.spec,
        "add_special_tokens": counter.add_special_tokens,
        "special_tokens_added": counter.special_tokens_added,
        "threads": counter.threads,
    }


class _Comparison:
    """Each faster backend's counts of ``texts`` against the reference's, filling ``verdicts`` (backend -> None
    when they agree, else why not); the reference counts once, on first need.
    """

    def __init__(
        self,
        candidate: TokenCounter,
        texts: list[str],
        verdicts: dict[str, str | None],
        make_texts: Callable[[], list[str]],
    ) -> None:
        self.candidate, self.texts, self.verdicts, self._make_texts = candidate, texts, verdicts, make_texts
        self._expected = None

    def expected(self):
        if self._expected is None:
            if not self.texts:
                self.texts = self._make_texts()
            reference = self.candidate.reference
            try:
                self._expected = self.candidate.counts_by(reference, self.texts)
            except BaseException as exc:  # a Rust panic too (Hugging Face's "AddedVocabulary bad split")
                if not is_engine_failure(exc):
                    raise
                raise FreqlabError(
                    f"{self.candidate.name}: the {reference} reference fails on sample text ({exc})"
                ) from exc
        return self._expected

    def run(self, backends: Iterable[str]) -> None:
        for backend in backends:
            if backend not in self.verdicts:
                self.verdicts[backend] = self._verdict(backend)

    def _verdict(self, backend: str) -> str | None:
        expected, texts = self.expected(), self.texts
        if backend == BACKEND_FASTOKENS:  # texts it never counts (they go to the next backend) are left out
            past = set(self.candidate.holding_fastokens_routed(texts))
            if past:
                kept = [i for i in range(len(texts)) if i not in past]
                expected, texts = expected[kept], [texts[i] for i in kept]
        try:
            got = self.candidate.counts_by(backend, texts)
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            return f"failed to load or count sample text ({_first_line(exc)})"
        return _first_difference(texts, expected, got, backend)


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
    it already.
    """
    sources: dict[str, Any] = {BACKEND_TIKTOKEN: plan}
    refusals: dict[str, str] = {}
    preset = FASTOKENS_PRESETS.get(plan.pat_str)
    script = script_refusal([plan.pat_str], "tiktoken")
    if script is None:
        version = fastokens_candidate(sources, refusals, lambda: FastokensRanks(plan, preset))
    else:
        version, refusals[BACKEND_FASTOKENS] = None, script
    routed = folded_routed(plan.pat_str) + ENCODING_ROUTED.get(preset or "", ())
    encoding = f"its {preset} encoding" if preset else "the ranks with their regex"
    note = f"fastokens: {encoding}{routing_note(routed)}" if routed else None  # which texts skip it, and for what
    candidate = TokenCounter(
        sources=sources, fastokens_version=version, fastokens_routed=routed, fastokens_note=note, **settings
    )
    if tiktoken_engine is not None:
        candidate._engines.put(BACKEND_TIKTOKEN, tiktoken_engine)
    return verified(candidate, refusals=refusals, verify_texts=verify_texts, salad_tokens=plan.mergeable_ranks)
