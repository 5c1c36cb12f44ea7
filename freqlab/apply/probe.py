"""Measure a model's effective context length by needle retrieval, as An et al. do ("Why Does the Effective
Context Length of LLMs Fall Short?", ICLR 2025, Sec. 3, Evaluation; Table 5 gives the input format).

The test (the paper's 4-needle Needle-in-a-Haystack): ``needles`` random 6-digit numbers ("One of the magic numbers
is 144231.") are hidden "at various positions" of a haystack after the instruction (one in each ``needles``-th of
it, :meth:`PromptBuilder.build`), and the model is asked "What are the magic numbers mentioned in the provided text?
The numbers are"; a test passes when its greedy answer contains at least ``need`` of them (the paper: 2 of 4). The
haystack here is the repeated "The grass is green. ..." filler of passkey tests (Mohtashami & Jaggi, 2023), so
nothing is downloaded; the paper used Paul Graham's essays.

Mechanics. Prompts are assembled from token ids, so each is exactly ``length`` tokens (the tokenizer's own
leading special tokens included). ``depth`` d is the needles' phase: needle k of n starts after ``round((k + d) ·
H / n)`` of the H haystack tokens, so d = 0 puts the first right after the instruction (farthest from the question),
d = 1 the last right before it. All prompts of one length have the same length, so they are generated in batches
without padding.

Effective length (the rule). A tested length passes when at least ``threshold`` (default 0.5) of its tests (all
depths and trials) pass. The paper increases the length "until the model fails", so the effective length is the
largest tested length such that it and every shorter tested length pass (``largest_passing`` is reported too: it
differs when a longer length passes again). The paper does not state the share of its 500 tests per length that
must pass; 0.5 is freqlab's default, not the paper's. Nothing here reports an accuracy it did not measure.

torch and transformers are imported only by :func:`load_model` and :func:`hf_generator`.
"""

from __future__ import annotations

import math
import re
import shlex
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np

from freqlab import apply as applied
from freqlab.errors import FreqlabError, brief, brief_line
from freqlab.sizes import MAX_POSITIONS

INSTRUCTION = (
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
    "I will quiz you about the important information there.\n"
)
FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
NEEDLE = " One of the magic numbers is {number}. "
QUERY = "\nWhat are the magic numbers mentioned in the provided text? The numbers are"
DEFAULT_DEPTHS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
DEFAULT_THRESHOLD = 0.5
NEEDLES, NEED = 4, 2  # the paper: 4 needles, at least 2 retrieved
ANSWER_MARGIN = 8  # tokens generated past the longest answer a test's needles take
# a needle's answer, " 123456,", is at most 8 tokens (a token holds a character or more): a bound on the answers
ANSWER_TOKENS_PER_NEEDLE = 8


@dataclass(frozen=True)
class Prompt:
    """One test: token ids (exactly ``length`` of them), the needle numbers and where each needle starts."""

    ids: list[int]
    numbers: tuple[str, ...]
    needle_starts: tuple[int, ...]
    length: int
    depth: float


class PromptBuilder:
    """Assembles needle prompts of exact token lengths from ``encode`` (text -> ids, no special tokens) and
    ``prefix`` (the tokenizer's leading special tokens, e.g. BOS).
    """

    def __init__(self, encode: Callable[[str], list[int]], prefix: Sequence[int] = (), needles: int = NEEDLES):
        if needles < 1:
            raise FreqlabError(f"needles must be >= 1, got {needles}")
        self.encode, self.prefix, self.needles = encode, list(prefix), needles
        self.head = self.prefix + encode(INSTRUCTION)
        self.query = encode(QUERY)
        self.filler = encode(FILLER)
        if not self.filler:
            raise FreqlabError("the tokenizer encodes the haystack filler to no tokens")

    def needle_ids(self, number: str) -> list[int]:
        """Token ids of the needle sentence holding ``number``."""
        return self.encode(NEEDLE.format(number=number))

    def minimum_length(self) -> int:
        """Shortest prompt with needles of ``000000`` (instruction, needles and question, no haystack): a real
        test's numbers may take more tokens (:meth:`needles_for` says how many).
        """
        return len(self.head) + len(self.query) + self.needles * len(self.needle_ids("000000"))

    def needles_for(self, rng: np.random.Generator) -> tuple[tuple[str, ...], list[list[int]]]:
        """The needle numbers a test draws from ``rng`` (``needles`` distinct 6-digit numbers) and their sentences'
        token ids: the first thing :meth:`build` draws, so the same ``rng`` state gives the same needles.
        """
        numbers = tuple(str(n) for n in 100_000 + rng.choice(900_000, self.needles, replace=False))
        return numbers, [self.needle_ids(number) for number in numbers]

    def build(self, length: int, depth: float, rng: np.random.Generator) -> Prompt:
        """A prompt of exactly ``length`` tokens whose needles are spread over the haystack at phase ``depth``.

        With H haystack tokens and n needles, needle k (0-based) starts at haystack token ⌊(k + depth) · H / n⌉:
        one needle in each n-th of the haystack, as the paper inserts them "at various positions" (Sec. 3, Table
        5). ``depth`` 0 puts the first right after the instruction (the farthest from the question), 1 the last
        right before the question.
        """
        if not 0.0 <= depth <= 1.0:
            raise FreqlabError(f"depth must be in [0, 1], got {depth}")
        numbers, needle_ids = self.needles_for(rng)
        hay = length - len(self.head) - sum(map(len, needle_ids)) - len(self.query)
        if hay < 0:
            raise FreqlabError(
                f"length {length} is too short for the needle template (at least {length - hay} tokens with the "
                f"needles {', '.join(numbers)})"
            )
        filler = (self.filler * (hay // len(self.filler) + 1))[:hay]
        ids, starts, at = list(self.head), [], 0
        for k, needle in enumerate(needle_ids):
            cut = round((k + depth) * hay / self.needles)
            ids += filler[at:cut]
            starts.append(len(ids))
            ids += needle
            at = cut
        ids += filler[at:] + self.query
        return Prompt(ids, numbers, tuple(starts), length, depth)


def retrieved(answer: str, numbers: Sequence[str]) -> int:
    """How many of the needle ``numbers`` the answer names (as whole numbers).

    >>> retrieved("The numbers are 144231, 543171 and 1264468.", ["144231", "543171", "264468"])
    2
    """
    named = set(re.findall(r"\d+", answer))
    return sum(number in named for number in numbers)


def effective_length(lengths: Sequence[int], accuracy: Sequence[float], threshold: float = DEFAULT_THRESHOLD) -> int:
    """Largest tested length that passes (accuracy >= threshold) with every shorter tested length passing; 0 when
    the shortest fails (see the module docstring).

    >>> effective_length([1024, 1152, 1280, 1408, 1536], [1.0, 0.9, 0.6, 0.3, 0.7])
    1280
    """
    order = np.argsort(lengths)
    best = 0
    for k in order:
        if accuracy[k] < threshold:
            break
        best = int(lengths[k])
    return best


def largest_passing(lengths: Sequence[int], accuracy: Sequence[float], threshold: float = DEFAULT_THRESHOLD) -> int:
    """Largest tested length with accuracy >= threshold, whatever the shorter ones did (0 if none).

    >>> largest_passing([1024, 1152, 1280, 1408, 1536], [1.0, 0.9, 0.6, 0.3, 0.7])
    1536
    """
    passing = [int(n) for n, a in zip(lengths, accuracy) if a >= threshold]
    return max(passing, default=0)


@dataclass(frozen=True)
class ProbeResult:
    """Passing tests per (depth, length) cell, out of ``trials`` each, for one model setting (``label``)."""

    label: str
    lengths: tuple[int, ...]
    depths: tuple[float, ...]
    passes: np.ndarray  # int64, (len(depths), len(lengths))
    trials: int
    needles: int
    need: int
    threshold: float
    found: np.ndarray = field(repr=False)  # needles retrieved in all, per cell (int64)

    @property
    def cell_accuracy(self) -> np.ndarray:
        """Share of passing tests per (depth, length)."""
        return self.passes / self.trials

    @property
    def accuracy(self) -> np.ndarray:
        """Share of passing tests per length (all depths)."""
        return self.passes.sum(axis=0) / (self.trials * len(self.depths))

    @property
    def effective_length(self) -> int:
        """Largest tested length that passes with every shorter tested length passing (:func:`effective_length`)."""
        return effective_length(self.lengths, self.accuracy, self.threshold)

    @property
    def largest_passing(self) -> int:
        """Largest tested length that passes, whatever the shorter ones did (:func:`largest_passing`)."""
        return largest_passing(self.lengths, self.accuracy, self.threshold)

    def to_dict(self) -> dict:
        """The result as JSON-ready data."""
        return {
            "label": self.label,
            "lengths": list(self.lengths),
            "depths": list(self.depths),
            "trials": self.trials,
            "needles": self.needles,
            "need": self.need,
            "threshold": self.threshold,
            "passes": self.passes.tolist(),
            "needles_found": self.found.tolist(),
            "accuracy": [float(a) for a in self.accuracy],
            "effective_length": self.effective_length,
            "largest_passing": self.largest_passing,
        }


@dataclass(frozen=True)
class ProbeReport:
    """A probe of one model (``model``) under several settings (stock, with a plan), on the same prompts: their
    results, the lm-evaluation-harness RULER command for the same lengths, and the figures written (if any).
    """

    model: str
    results: tuple[ProbeResult, ...]
    ruler_command: str
    figure: tuple[str, ...] | None = None

    def to_dict(self) -> dict:
        """What ``freqlab probe --json`` prints."""
        results = [r.to_dict() for r in self.results]
        figure = None if self.figure is None else list(self.figure)
        return {"model": self.model, "results": results, "ruler_command": self.ruler_command, "figure": figure}

    def report(self) -> str:
        """What ``freqlab probe`` prints: the rule, accuracy per length and setting, the effective length of each
        setting, the figures written and the RULER command.
        """
        first = self.results[0]
        lengths = first.lengths
        lines = [
            f"{self.model}: {first.trials} tests per (length, depth) at depths {', '.join(map(str, first.depths))}; "
            f"a test passes with >= {first.need} of {first.needles} needles, a length with >= {first.threshold:.0%} "
            "of its tests"
        ]
        width = max(len(r.label) for r in self.results)
        lines.append(f"{'length':>8}  " + "  ".join(f"{r.label:>{width}}" for r in self.results))
        for j, length in enumerate(lengths):
            lines.append(
                f"{length:>8,}  " + "  ".join(f"{_percent_down(r.accuracy[j]):>{width}}" for r in self.results)
            )
        for r in self.results:
            E = r.effective_length
            text = _effective_text(E, lengths)
            extra = f" (a longer length passes again: {r.largest_passing:,})" if r.largest_passing > E else ""
            if E and lengths[-1] == E:  # a review: read as the model's limit, where it is only the probe's
                extra = " (every tested length passes: at least this; test longer lengths to find the limit)"
            lines.append(f"effective length, {r.label}: {text}{extra}")
        if self.figure:
            lines.append(f"wrote {', '.join(self.figure)}")
        lines += ["RULER in lm-evaluation-harness at these lengths (stock model):", f"  {self.ruler_command}"]
        return "\n".join(lines)


def _percent_down(share: float) -> str:
    """``share`` as a whole percent rounded down: 100/201 of the tests is 49%, not a 50% that fails a threshold of 50%
    (a review); 100% only when every test passed.
    """
    return f"{math.floor(share * 100 + 1e-9)}%"


Generator = Callable[[list[list[int]], int], list[str]]


def probe_lengths(lengths: Sequence[int]) -> tuple[int, ...]:
    """The lengths to test, sorted and distinct (the effective length reads them in order); a FreqlabError for none,
    or for one that is no whole number of tokens from 1 to ``MAX_POSITIONS``.

    >>> probe_lengths([2048, 1024.0, 2048])
    (1024, 2048)
    """
    out = set()
    for n in lengths:
        number = not isinstance(n, bool) and isinstance(n, int | float | np.integer | np.floating)
        if not (number and math.isfinite(n) and 1 <= n <= MAX_POSITIONS and n == int(n)):
            raise FreqlabError(
                f"a length to test must be a whole number of tokens from 1 to {MAX_POSITIONS:,}, got {n!r}"
            )
        out.add(int(n))
    if not out:
        raise FreqlabError("no lengths to test")
    return tuple(sorted(out))


def probe(
    generate: Generator,
    builder: PromptBuilder,
    lengths: Sequence[int],
    depths: Sequence[float] = DEFAULT_DEPTHS,
    *,
    trials: int = 5,
    need: int = NEED,
    threshold: float = DEFAULT_THRESHOLD,
    batch_size: int = 8,
    max_new_tokens: int | None = None,
    seed: int = 0,
    label: str = "model",
    progress: Callable[[int], None] | None = None,
) -> ProbeResult:
    """Run ``trials`` tests per (length, depth); ``generate(batch of ids, max_new_tokens)`` returns the answers.

    The needles of test k at (length, depth) depend only on (seed, length, depth index, k), so two settings
    (stock model, model with a plan) see the same prompts. ``progress(n)`` is called after each batch of n tests.
    """
    for name, value in (("need", need), ("trials", trials), ("batch_size", batch_size)):  # 2.5 or "3": a TypeError
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:  # deep inside (a review)
            raise FreqlabError(f"{name} must be a whole number >= 1, got {brief(value)}")
    if need > builder.needles:
        raise FreqlabError(f"need must be in 1..{builder.needles}, got {need}")
    if not 0.0 < threshold <= 1.0:
        raise FreqlabError(f"threshold must be in (0, 1], got {threshold}")
    lengths, depths = probe_lengths(lengths), tuple(float(d) for d in depths)
    if not depths:
        raise FreqlabError("no depths to test")
    longest_answer = 0  # every test's needles, drawn before anything runs: a length too short is refused first
    for length in lengths:
        for i in range(len(depths)):
            for k in range(trials):
                numbers, needle_ids = builder.needles_for(np.random.default_rng([seed, length, i, k]))
                if length < len(builder.head) + sum(map(len, needle_ids)) + len(builder.query):
                    builder.build(length, depths[i], np.random.default_rng([seed, length, i, k]))  # its error
                longest_answer = max(longest_answer, sum(len(builder.encode(f" {n},")) for n in numbers))
    max_new_tokens = max_new_tokens or longest_answer + ANSWER_MARGIN
    limit = getattr(generate, "positions", None)  # a model of learned positions reads none past them
    if limit is not None and max(lengths) + max_new_tokens > limit:  # refused before any test (a review: IndexError)
        fits = limit - max_new_tokens
        advice = (
            f"test lengths up to {fits:,}"
            if fits >= builder.minimum_length()
            else f"no test fits (the shortest prompt takes {builder.minimum_length():,} tokens)"
        )
        raise FreqlabError(
            f"length {max(lengths):,} and up to {max_new_tokens} tokens of answer pass the {limit:,} learned "
            f"positions of the model, which has none beyond them: {advice}"
        )
    passes = np.zeros((len(depths), len(lengths)), dtype=np.int64)
    found = np.zeros_like(passes)
    for j, length in enumerate(lengths):
        tests = [
            (i, builder.build(length, depth, np.random.default_rng([seed, length, i, k])))
            for i, depth in enumerate(depths)
            for k in range(trials)
        ]
        for start in range(0, len(tests), batch_size):
            batch = tests[start : start + batch_size]
            try:
                answers = generate([prompt.ids for _, prompt in batch], max_new_tokens)
            except (MemoryError, RuntimeError) as exc:  # torch.OutOfMemoryError is a RuntimeError
                if not _out_of_memory(exc):
                    raise
                done = ", ".join(f"{lengths[x]:,}: {int(passes[:, x].sum())}/{passes.shape[0] * trials} passed"
                                 for x in range(j))  # fmt: skip
                raise FreqlabError(  # a review: torch's traceback, and the lengths already tested lost with it
                    f"{label}: out of memory at length {length:,} with {len(batch)} prompt(s) at once "
                    f"({_first_line(exc)}): use a smaller batch size or shorter lengths"
                    + (f"; tested before it: {done}" if done else "")
                ) from None
            for (i, prompt), answer in zip(batch, answers):
                hits = retrieved(answer, prompt.numbers)
                found[i, j] += hits
                passes[i, j] += hits >= need
            if progress is not None:
                progress(len(batch))
    return ProbeResult(label, lengths, depths, passes, trials, builder.needles, need, threshold, found)


def _out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is torch (or Python) running out of memory: CUDA's OutOfMemoryError, the CPU allocator's
    "can't allocate memory", MemoryError.
    """
    text = str(exc)
    return (
        isinstance(exc, MemoryError)
        or type(exc).__name__ == "OutOfMemoryError"
        or "can't allocate memory" in text
        or "out of memory" in text.lower()
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _effective_text(E: int, lengths: Sequence[int]) -> str:
    """An effective length as the report says it (0: none of the tested lengths)."""
    return f"{E:,}" if E else f"below the shortest tested length ({lengths[0]:,})"


def _done(results: Sequence[ProbeResult]) -> str:
    """The settings probed in full, as a stopped probe's message names them."""
    return "; ".join(f"{r.label}: effective length {_effective_text(r.effective_length, r.lengths)}" for r in results)


class ProbeStopped(FreqlabError):
    """A :func:`probe_settings` run that ran out of memory in a later setting: ``results`` holds the settings
    probed in full before it (hours of tests on a long model), which the message names too.
    """

    def __init__(self, message: str, results: Sequence[ProbeResult]) -> None:
        super().__init__(message)
        self.results = tuple(results)


class ProbeInterrupted(KeyboardInterrupt):
    """Ctrl-C during a later setting of :func:`probe_settings`: a KeyboardInterrupt still, whose ``results`` holds
    the settings probed in full before it (a review: the stock model's hour of tests was lost with the interrupt).
    """

    def __init__(self, results: Sequence[ProbeResult]) -> None:
        super().__init__(f"interrupted (probed in full before it: {_done(results)})")
        self.results = tuple(results)


def probe_settings(
    model: Any,
    tokenizer: Any,
    builder: PromptBuilder,
    lengths: Sequence[int],
    depths: Sequence[float] = DEFAULT_DEPTHS,
    *,
    plans: Sequence[tuple[str, tuple[int, int]]] = (),
    baseline: bool = True,
    progress: Callable[[int], None] | None = None,
    allow_untested: bool = False,
    **options: Any,
) -> list[ProbeResult]:
    """:func:`probe` a Hugging Face model stock (``baseline``) and with each of ``plans`` applied in turn
    (``("STRING", (S, W))`` or ``("Self-Extend", (G, w_n))``, removed after its probe), on the same prompts;
    ``options``: :func:`probe`'s (trials, need, threshold, batch_size, seed). A plan the model cannot take (a
    model type not tested, unless ``allow_untested``: :func:`freqlab.apply.check_model_type`; a partial rotary) is
    refused before anything runs: each is applied and removed first. A setting that runs out of memory after
    others were probed raises :class:`ProbeStopped`, which keeps their results; Ctrl-C then, :class:`ProbeInterrupted`.
    """
    patch = {"STRING": applied.string, "Self-Extend": applied.self_extend}
    plans = [_plan(plan, patch) for plan in plans]  # a generator is read once, here
    with warnings.catch_warnings():  # each plan applied and removed before anything runs: what the model cannot
        warnings.simplefilter("ignore")  # take (a type not tested, a partial rotary) is refused before the baseline
        for name, values in plans:
            patch[name](model, *values, allow_untested=allow_untested)
            applied.remove(model)
    settings = [("stock", None, None)] if baseline else []
    settings += [(f"{name} {a},{b}", name, (a, b)) for name, (a, b) in plans]
    results = []
    for label, name, values in settings:
        if name is not None:
            patch[name](model, *values, allow_untested=allow_untested)
        try:  # a probe that raises (out of memory, Ctrl-C in a notebook) leaves the model as it was given
            generate = hf_generator(model, tokenizer)
            results.append(probe(generate, builder, lengths, depths, label=label, progress=progress, **options))
        except FreqlabError as exc:  # out of memory mid-probe (the only error after the checks): a review, the
            if not results:  # settings probed before it were lost with it
                raise
            raise ProbeStopped(f"{exc} (probed in full before it: {_done(results)})", results) from None
        except KeyboardInterrupt:
            if not results:
                raise
            raise ProbeInterrupted(results) from None
        finally:
            if name is not None:
                applied.remove(model)
    return results


def _plan(plan: Any, names: dict) -> tuple[str, tuple[Any, Any]]:
    """``(name, (a, b))`` of a plan given to :func:`probe_settings`, or one FreqlabError (a review: ("string", ...)
    was a KeyError, three values a TypeError, an unhashable name a TypeError).
    """
    try:
        name, (a, b) = plan
    except (TypeError, ValueError):
        name = None
    if not (isinstance(name, str) and name in names and not isinstance(plan[1], str)):
        raise FreqlabError(f"a plan is ('STRING', (S, W)) or ('Self-Extend', (G, w_n)), got {brief(plan)}")
    return name, (a, b)


# --- Hugging Face models ---------------------------------------------------------------------------------------


def load_model(
    path: str, dtype: str = "auto", device: str | None = None, attn_implementation: str | None = None
) -> tuple[Any, Any]:
    """A local causal LM directory (offline: ``local_files_only``) -> (model in eval mode, tokenizer).

    ``attn_implementation`` (None: transformers' default) is the model's attention: with ``flash_attention_2`` or
    ``_3`` and flash-attn installed, the plans applied to it take their flash backend (``backend="auto"``).
    """
    from freqlab.apply import require

    torch = require("torch")
    transformers = require("transformers")
    from pathlib import Path

    if not (Path(path) / "config.json").is_file():
        raise FreqlabError(f"{path}: cannot load a causal LM and its tokenizer offline (no config.json there)")
    device = usable_device(torch, device)  # before loading: a bad one was a traceback after it (a review)
    if not any(_tokenizer_file(child.name) for child in Path(path).iterdir()):  # transformers asked to install
        # sentencepiece or tiktoken (a review)
        raise FreqlabError(
            f"{path}: cannot load a causal LM and its tokenizer offline (no tokenizer file there: tokenizer.json, "
            "tokenizer_config.json, tokenizer.model, vocab.json, ...; save the tokenizer beside the model with "
            "tokenizer.save_pretrained)"
        )
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            path,
            local_files_only=True,
            dtype=dtype if dtype == "auto" else getattr(torch, dtype),
            **({"attn_implementation": attn_implementation} if attn_implementation else {}),
        )
    except Exception as exc:  # an ImportError for a kernel not installed; a TypeError or AttributeError from a
        # config.json transformers cannot read (null, a text_config without model_type): all one line
        # its lines as one (a first line "...from one of:" named nothing: a review), at most 300 characters
        reason = brief_line(str(exc), 300) if str(exc).strip() else type(exc).__name__
        raise FreqlabError(
            f"{path}: cannot load a causal LM and its tokenizer offline ({type(exc).__name__}: {reason})"
        ) from None
    return model.to(device).eval(), tokenizer


def _tokenizer_file(name: str) -> bool:
    """Whether a file of this name can hold a tokenizer transformers loads (its own files, SentencePiece, BPE
    vocabularies, tiktoken and Tekken files).
    """
    known = {"vocab.json", "vocab.txt", "merges.txt", "spiece.model", "tekken.json"}
    return name.startswith("tokenizer") or name in known or name.endswith((".tiktoken", ".model"))


def usable_device(torch: Any, device: str | None) -> Any:
    """``device`` as a torch device this process can use (None: CUDA when there is one, else the CPU), or a
    FreqlabError in one line naming it.
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise FreqlabError(f"device {device!r}: not a torch device ({brief_line(str(exc), 200)})") from None
    backend = getattr(torch, chosen.type, None)  # torch.cuda, torch.mps, torch.xpu: each says if it is there
    available = getattr(backend, "is_available", None)
    # a type without a backend that says so (meta, hpu, lazy, ...) failed after loading, in a traceback (a review)
    if chosen.type != "cpu" and not (callable(available) and available()):
        raise FreqlabError(f"device {device!r}: no {chosen.type} device is available to this process")
    count = getattr(backend, "device_count", None)
    if chosen.index is not None and callable(count) and chosen.index >= count():
        raise FreqlabError(f"device {device!r}: this process sees {count()} {chosen.type} device(s)")
    return chosen


def hf_builder(tokenizer: Any, needles: int = NEEDLES) -> PromptBuilder:
    """A PromptBuilder with the tokenizer's own leading special tokens (what it adds to an empty text)."""
    prefix = tokenizer("", add_special_tokens=True)["input_ids"]
    return PromptBuilder(lambda text: tokenizer(text, add_special_tokens=False)["input_ids"], prefix, needles)


def hf_generator(model: Any, tokenizer: Any) -> Generator:
    """Greedy generation on equal-length prompts (no padding needed); returns the decoded new tokens."""
    from freqlab.apply import require

    torch = require("torch")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def generate(batch: list[list[int]], max_new_tokens: int) -> list[str]:
        ids = torch.tensor(batch, device=model.device)
        try:
            with torch.no_grad():
                out = model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=pad,
                )
        except (IndexError, RuntimeError) as exc:  # a table of positions (CodeGen's sin/cos, MPT's ALiBi) run past
            window = None if _out_of_memory(exc) else _window_or_none(model)
            if window is None or ids.shape[1] + max_new_tokens <= window:
                raise
            raise FreqlabError(
                f"length {ids.shape[1]:,} and up to {max_new_tokens} tokens of answer pass the {window:,} positions "
                f"of {type(model).__name__}, which read none beyond them ({type(exc).__name__}: {_first_line(exc)})"
            ) from None
        return tokenizer.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)

    generate.positions = learned_positions(model)  # type: ignore[attr-defined]
    return generate


LEARNED_POSITIONS = ("wpe", "embed_positions", "position_embeddings")  # GPT-2, OPT, BERT-like: a table per position


def learned_positions(model: Any) -> int | None:
    """The positions a model of learned absolute position embeddings has (its ``max_position_embeddings``), None
    for rotary, ALiBi and other models that read any position.
    """
    names = {name.rsplit(".", 1)[-1] for name, module in model.named_modules() if hasattr(module, "num_embeddings")}
    rotary = any(type(m).__name__.endswith("RotaryEmbedding") for m in model.modules())
    return None if rotary or not names & set(LEARNED_POSITIONS) else _window_or_none(model)


def _window_or_none(model: Any) -> int | None:
    from freqlab.apply.attention import model_window

    try:
        return model_window(model)
    except FreqlabError:
        return None


def ruler_command(model: str, lengths: Sequence[int], batch_size: int = 1) -> str:
    """The lm-evaluation-harness RULER command for ``lengths`` (its ``--metadata`` JSON ``max_seq_lengths``; the
    harness's RULER README also asks for ``max_length`` in ``--model_args`` so long inputs are not truncated).

    >>> print(ruler_command("./my-model", [4096, 8192]))
    lm_eval --model hf --model_args pretrained=./my-model,max_length=8192 --tasks ruler --metadata='{"max_seq_lengths":[4096,8192]}' --batch_size 1
    >>> print(ruler_command("/models/my model", [4096]))  # quoted for the shell (a review)
    lm_eval --model hf --model_args 'pretrained=/models/my model,max_length=4096' --tasks ruler --metadata='{"max_seq_lengths":[4096]}' --batch_size 1
    """  # noqa: E501
    lengths = sorted({int(n) for n in lengths})
    if not lengths:
        raise FreqlabError("no lengths for the RULER command")
    metadata = '{"max_seq_lengths":[' + ",".join(str(n) for n in lengths) + "]}"
    arguments = shlex.quote(f"pretrained={model},max_length={lengths[-1]}")  # a path with a space: one argument
    command = (
        f"lm_eval --model hf --model_args {arguments} --tasks ruler --metadata={shlex.quote(metadata)} "
        f"--batch_size {batch_size}"
    )
    if "," in model:  # lm_eval splits --model_args at every comma, quoted or not
        command += "  # the model path's comma splits --model_args: link the model to a path without one"
    return command
