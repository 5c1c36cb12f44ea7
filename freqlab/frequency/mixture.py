"""Source weights: the position frequency of the training mix, not of the sources' raw shares.

A histogram split by source (``lengths.parquet`` with a ``source`` column) holds each source as scanned, but runs
train on mixes whose weights differ from the raw shares: TinyLlama samples SlimPajama and StarCoderData about 7:3,
LLaMA trains Wikipedia and Books 2.45 and 2.23 epochs against 1.10 for CommonCrawl (Touvron et al. 2023, Table 1).
A :class:`Mixture` gives every source a weight in one of two units:

``epochs``
    how many times the source's documents are trained: a multiplier m_s (2 = every document twice).
``share``
    the share p_s of training tokens the source makes up: m_s = p_s / T_s, with T_s the source's tokens in the
    histogram. Given as ``W%`` on the command line, the shares must sum to 100%; in a mixture file (or a preset)
    they are relative weights, normalised to sum 1, and every output that shows them says so when they did not
    already sum to 100.

The mix's document histogram is c(n) = Σ_s m_s · c_s(n). Every regime then runs on it unchanged. Under ``natural`` and
``truncate`` (each segment one document's) f_T = f · T / f(0) depends on c only up to a common factor, so multipliers
count only relative to each other; the regimes that cut one stream (``concat``, ``uniform``, ``pack``, ``best-fit``)
also depend on how long the stream is (concat's last partial row, uniform's rows over 1..L, where the row boundaries
fall), so ``a=1,b=1`` (the corpus itself, once) and ``a=0.5,b=0.5`` (a distribution: its counts scaled by K) can
differ there, most for a corpus of fewer than ~L²/2 tokens under ``uniform``. With integer epochs c is
an integer histogram: everything downstream stays exact int64. Otherwise the multipliers are float64 and c is
m_s · c_s(n) scaled by one common factor K and rounded to integers (K as large as int64 allows, up to
2^30 / min m_s) so that each source's documents of at least n tokens are, for every n, their weighted number rounded
(a rare long document survives a small K in proportion, not rounded away); the largest relative error of such a count
is reported. Both are stated in every output.

Weights are given as ``SOURCE=W,...`` (epochs; ``SOURCE=W%,...`` for shares), a YAML/JSON mixture file, or the name
of a published mix (:data:`PRESETS`, from ``freqlab/data/mixtures.json``, each number with its source)::

    unit: share                  # or epochs (the default)
    weights: {slimpajama: 7, starcoderdata: 3}

Every source of the histogram needs a weight (0 leaves it out) and every weight a source of the histogram: anything
else is a one-line error.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from importlib import resources
from pathlib import Path

import numpy as np

from freqlab.arrays import exact_sum
from freqlab.config_file import read_config_file
from freqlab.display import name_column
from freqlab.errors import FreqlabError, brief
from freqlab.frequency.position import position_frequency
from freqlab.frequency.regimes import WALKED_MIX_DOCUMENTS, WALKED_MIX_ROWS
from freqlab.histogram import LengthHistogram, combine_sources
from freqlab.paths import expand_home, printable
from freqlab.sizes import exact_number

UNITS: tuple[str, ...] = ("epochs", "share")
RESOLUTION = 1 << 30  # the smallest multiplier becomes at least this many counts per document (float64 weights)
_COUNT_LIMIT = 1 << 62  # weighted tokens stay below this (f(0) and every sum in f are then exact int64)
MAX_STREAM_DOCUMENTS = WALKED_MIX_DOCUMENTS  # pack expands the histogram into a stream: keep float64 mixes this small


@dataclass(frozen=True)
class Mixture:
    """Weights per source, in ``unit`` (``epochs`` or ``share``); ``name`` says where they came from.

    Parameters
    ----------
    weights : dict of str to Fraction
        Weight m_s of each source s.
    unit : str
        ``epochs`` (passes over the source) or ``share`` (fraction of the training tokens).
    name, citation, note : str
        Where the weights came from (a preset's name and its source), for reports.

    Notes
    -----
    The training mix's histogram is c(n) = Σ_s m_s · c_s(n) (see :func:`weighted_histogram`).

    Examples
    --------
    >>> m = Mixture.parse("a=2,b=1")
    >>> m.unit, m.weights
    ('epochs', {'a': Fraction(2, 1), 'b': Fraction(1, 1)})
    >>> Mixture.parse("a=70%,b=30%").unit
    'share'
    """

    weights: dict[str, Fraction]
    unit: str = "epochs"
    name: str = "weights"
    citation: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise FreqlabError(f"{self.name}: unit must be epochs or share, got {brief(self.unit)}")
        if not self.weights:
            raise FreqlabError(f"{self.name}: no weights given")
        clean = {}
        for source, weight in self.weights.items():
            clean[str(source)] = _weight(weight, f"{self.name}: weight of {brief(source)}")
        if not any(clean.values()):
            raise FreqlabError(f"{self.name}: every weight is 0: nothing would be trained")
        object.__setattr__(self, "weights", clean)

    # construction -----------------------------------------------------------------------------------------
    @classmethod
    def parse(cls, spec: str | Path | Mapping | Mixture, name: str = "--weights") -> Mixture:
        """A mixture from ``SOURCE=W,...`` (``W%``: shares), a YAML/JSON file, a preset name, or a mapping; ``name``:
        where ``SOURCE=W,...`` was given, for its errors and reports (a schedule's stage, a file's default).
        """
        if isinstance(spec, Mixture):
            return spec
        if isinstance(spec, Mapping):
            return cls.from_dict(spec, name="weights")
        text = str(spec).strip()
        if not text:
            raise FreqlabError(f"no weights given: SOURCE=W,..., a mixture file or a preset ({', '.join(PRESETS)})")
        if text in PRESETS:
            return PRESETS[text]
        path = Path(expand_home(text))
        if "=" not in text or path.is_file():
            if not path.is_file():
                named = path.suffix.lower() in (".yaml", ".yml", ".json") or os.sep in text
                what = "no such mixture file" if named else "not SOURCE=W,..., a mixture file or a preset"
                raise FreqlabError(f"{text}: {what} (presets: {', '.join(PRESETS)})")
            return load_mixture(path)
        return cls._from_pairs(text, name)

    @classmethod
    def _from_pairs(cls, text: str, name: str = "--weights") -> Mixture:
        weights: dict[str, Fraction] = {}
        percent = set()
        for item in text.split(","):
            source, equals, value = item.strip().rpartition("=")
            if not equals or not source.strip():
                raise FreqlabError(f"{name} {text!r}: {item.strip()!r} is not SOURCE=WEIGHT")
            value = value.strip()
            percent.add(value.endswith("%"))
            source = source.strip()
            if source in weights:
                raise FreqlabError(f"{name} {text!r}: source {source!r} is given twice")
            weights[source] = _weight(value.removesuffix("%"), f"{name}: weight of {source!r}")
        if len(percent) > 1:
            raise FreqlabError(f"{name} {text!r}: give every weight as a share (W%) or none")
        total = sum(weights.values(), Fraction(0))
        if percent == {True} and total != 100:
            raise FreqlabError(
                f"{name} {text!r}: the shares sum to {_show_apart(total, 100)}%, not 100%; give shares that sum "
                "to 100% (relative weights go in a mixture file with unit: share, normalised and said so)"
            )
        return cls(weights, "share" if percent == {True} else "epochs", name)

    @classmethod
    def from_dict(cls, data, *, name: str) -> Mixture:
        """From ``{unit, weights, citation, note}``, or a plain ``{source: weight}`` mapping (epochs)."""
        if not isinstance(data, Mapping) or not data:
            raise FreqlabError(f"{name}: a mixture is a mapping {{unit: ..., weights: {{SOURCE: W}}}}")
        if "weights" not in data:
            if "unit" in data:  # a file's keys with weights misspelt (weigths: ...): 'unit' is no source (a review)
                raise FreqlabError(f"{name}: 'unit' without 'weights' (a mixture is {{unit: ..., weights: {{...}}}})")
            return cls(dict(data), "epochs", name)
        unknown = set(data) - {"unit", "weights", "citation", "note"}
        if unknown:
            raise FreqlabError(f"{name}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        weights = data["weights"]
        if not isinstance(weights, Mapping):
            raise FreqlabError(f"{name}: 'weights' must map sources to numbers, got {brief(weights)}")
        return cls(
            dict(weights),
            str(data.get("unit", "epochs")),
            name,
            str(data.get("citation", "")),
            str(data.get("note", "")),
        )

    # meaning ----------------------------------------------------------------------------------------------
    @property
    def integer_epochs(self) -> bool:
        """Every weight a whole number of epochs: the mix is an exact integer histogram."""
        return self.unit == "epochs" and all(w.denominator == 1 for w in self.weights.values())

    def multipliers(self, h: LengthHistogram) -> dict[str, Fraction]:
        """m_s per source of ``h`` (exact rationals), after checking that weights and sources match."""
        if not h.sources:
            raise FreqlabError(
                f"{self.name}: the histogram has no sources to weight (scan with --source-field, or combine "
                "histograms with freqlab.histogram.combine_sources)"
            )
        unknown = [s for s in self.weights if s not in h.sources]
        if unknown:
            raise FreqlabError(
                f"{self.name}: source {unknown[0]!r} is not in the histogram (its sources: {', '.join(h.sources)})"
            )
        missing = [s for s in h.sources if s not in self.weights]
        if missing:
            # a label the command line cannot spell (empty; holding '=' or ','; spaces at its ends) goes in a file
            label = missing[0]
            spellable = label and label.strip() == label and not set(label) & {"=", ","}
            spell = (
                "; a label SOURCE=W,... cannot spell is given in a mixture file: {weights: {'': 1, ...}}"
                if self.name == "--weights" and not spellable
                else ""
            )
            raise FreqlabError(
                f"{self.name}: no weight for source {missing[0]!r} of the histogram (0 leaves it out{spell})"
            )
        if self.unit == "epochs":
            return dict(self.weights)
        total = sum(self.weights.values())
        out = {}
        for source, p in self.weights.items():
            tokens = h.sources[source].tokens
            if p and not tokens:
                raise FreqlabError(
                    f"{self.name}: source {source!r} has no tokens, so it cannot make up {float(p / total):.1%}"
                )
            out[source] = p / total / tokens if p else Fraction(0)
        return out

    def share_percent(self, source: str) -> Fraction:
        """The share of training tokens ``source`` makes up, in percent (shares normalised to sum 100%)."""
        return 100 * self.weights[source] / sum(self.weights.values())

    def describe(self) -> str:
        """``epochs a=2, b=1 (--weights)``; shares that do not sum to 100 say they were normalised:
        ``share a=7, b=3 (relative, sum 10: normalised to a=70%, b=30%) (tinyllama)``.
        """
        if self.unit == "epochs" or sum(self.weights.values()) == 100:
            unit = "%" if self.unit == "share" else ""
            shown = ", ".join(f"{s}={_show(w)}{unit}" for s, w in self.weights.items())
            return f"{self.unit} {shown} ({self.name})"
        given = ", ".join(f"{s}={_show(w)}" for s, w in self.weights.items())
        normalised = ", ".join(f"{s}={float(self.share_percent(s)):.4g}%" for s in self.weights)
        total = _show(sum(self.weights.values(), Fraction(0)))
        return f"share {given} (relative, sum {total}: normalised to {normalised}) ({self.name})"


#: the range of a non-zero weight (epochs or share): what float64 holds, so that every weight prints and serialises
#: as a number (1e-400 would be 0.0 there, 1e400 infinite)
WEIGHT_RANGE = (Fraction(1, 10**300), Fraction(10**300))


def _weight(value, where: str) -> Fraction:
    """A weight as an exact rational: decimal text and floats are read as written (0.7 is 7/10); 0 or within
    :data:`WEIGHT_RANGE`.
    """
    if isinstance(value, bool):
        raise FreqlabError(f"{where} must be a number, got {brief(value)}")
    try:
        if isinstance(value, (int, Fraction)):
            weight = Fraction(value)
        else:
            weight = exact_number(repr(float(value)) if isinstance(value, float) else str(value))  # np.float64 too
    except (ValueError, ZeroDivisionError, OverflowError):
        percent = isinstance(value, str) and value.strip().endswith("%")
        hint = " (shares are relative numbers, normalised to their sum: 70 for 70%)" if percent else ""
        raise FreqlabError(f"{where} must be a number, got {brief(value)}{hint}") from None
    if weight < 0:
        raise FreqlabError(f"{where} must be >= 0, got {brief(value)}")
    if weight and not WEIGHT_RANGE[0] <= weight <= WEIGHT_RANGE[1]:
        raise FreqlabError(f"{where} must be 0 or within 1e-300..1e300, got {brief(value)}")
    return weight


def _show(w: Fraction) -> str:
    return str(w.numerator) if w.denominator == 1 else _sci(w)


def _show_apart(w: Fraction, other: int) -> str:
    """``w`` with as many digits as it takes to tell it from ``other`` (25.0000001% + 75% is shown as
    100.0000001, not 100.000); beyond 27 significant digits, as ``other`` ± the difference.
    """
    if w.denominator == 1:
        return str(w.numerator)
    for digits in range(6, 28):
        text = _sci(w, digits)
        if Decimal(text) != other:
            return text
    return f"{other} {'+' if w > other else '-'} {_sci(abs(w - other))}"


def _sci(x: Fraction, digits: int = 6) -> str:
    """A rational in %g form whatever its exponent (float64 would give 0 or inf beyond 1e±308)."""
    return f"{Decimal(x.numerator) / Decimal(x.denominator):.{digits}g}"


def load_mixture(path: str | Path) -> Mixture:
    """Read a YAML or JSON mixture file (see the module docstring; bounds: :mod:`freqlab.config_file`), once per
    version of the file: ``--weights`` is checked when the command line is read and used later.
    """
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        return _load_mixture(path, None)
    return _load_mixture(path.resolve(), (stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _load_mixture(path: Path, version) -> Mixture:
    return Mixture.from_dict(read_config_file(path, "mixture"), name=str(path))


def _load_presets() -> dict[str, Mixture]:
    text = resources.files("freqlab").joinpath("data/mixtures.json").read_text(encoding="utf-8")
    return {name: Mixture.from_dict(data, name=name) for name, data in json.loads(text).items()}


#: Published mixes, each with the paper or card its numbers come from (``freqlab/data/mixtures.json``).
PRESETS: dict[str, Mixture] = _load_presets()


@dataclass(frozen=True)
class MixtureInfo:
    """How a weighted histogram was made: per source the raw documents and tokens, the weight and m_s; the scale K
    of the counts and the largest relative rounding error (0 and exact for integer epochs).
    """

    mixture: Mixture
    multipliers: dict[str, float]
    raw_documents: dict[str, int]
    raw_tokens: dict[str, int]
    exact: bool
    scale: Fraction = Fraction(1)
    max_rounding_error: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    # the histogram the mix was made from: its counts are the corpus's (a mix of shares has scaled counts)
    corpus: LengthHistogram | None = field(default=None, repr=False, compare=False)

    @property
    def arithmetic(self) -> str:
        """How each source's multiplier was computed, as text."""
        if self.exact:
            return "exact int64 (integer epochs)"
        return (
            f"float64 weights: counts m_s·c_s(n) scaled by K = {_sci(self.scale)} and rounded, each source's "
            f"documents of at least n tokens for every n (largest relative error of one {self.max_rounding_error:.1e})"
        )

    def to_dict(self) -> dict:
        """The mixture as JSON-ready data."""
        return {
            "name": self.mixture.name,
            "unit": self.mixture.unit,
            "weights": {s: float(w) for s, w in self.mixture.weights.items()},
            "citation": self.mixture.citation,
            "multipliers": self.multipliers,
            "arithmetic": self.arithmetic,
            "exact": self.exact,
            # K exactly ("2147483648", or "p/q"): the mix's counts are the weighted counts times K, rounded (exact for
            # integer epochs), and its f and tokens theirs
            "scale": str(self.scale),
        }


def weighted_histogram(
    h: LengthHistogram, weights: Mixture | str | Mapping, *, stream: bool | int = False, window: int | None = None
) -> tuple[LengthHistogram, MixtureInfo]:
    """The training mix's histogram, split by source, and how it was made.

    Parameters
    ----------
    h : LengthHistogram
        The corpus's histogram, split by source.
    weights : Mixture, str or Mapping
        Weight per source (``"a=2,b=1"``, ``"a=70%,b=30%"`` or a preset name).
    stream : bool or int
        The caller will walk the histogram document by document (the ``pack`` and ``best-fit`` regimes:
        :func:`~freqlab.frequency.regimes.expands_documents`), so a float64 mix keeps its documents below
        :data:`MAX_STREAM_DOCUMENTS` (``True``) or below this many (an int: a replay in Python).
    window : int, optional
        With ``stream``: the caller walks rows of this window one by one too (a curriculum's rows), so the mix's
        Σ ⌈n/window⌉·c(n) rows also stay below :data:`~freqlab.frequency.regimes.WALKED_MIX_ROWS`.

    Returns
    -------
    tuple of (LengthHistogram, MixtureInfo)
        The weighted histogram and how it was made (``exact``: integer epochs, an exact int64 histogram).

    Notes
    -----
    c(n) = Σ_s m_s · c_s(n), where c_s(n) is the number of documents of n tokens in source s and m_s its
    weight in epochs.

    Examples
    --------
    >>> h = combine_sources({"a": LengthHistogram.from_lengths([10, 20]), "b": LengthHistogram.from_lengths([5])})
    >>> mix, info = weighted_histogram(h, "a=1,b=3")
    >>> mix.sources["b"].counts.tolist(), mix.tokens, info.exact
    ([3], 45, True)
    """
    if not hasattr(h, "sources"):  # a list was "'list' object has no attribute 'sources'" (a review)
        raise FreqlabError(f"weighted_histogram takes a LengthHistogram split by source, got {brief(h)}")
    mixture = Mixture.parse(weights)
    m = mixture.multipliers(h)
    sources = h.sources or {}  # multipliers() raised if h has no sources: this is h.sources
    raw_docs = {s: g.documents for s, g in sources.items()}
    raw_tokens = {s: g.tokens for s, g in sources.items()}
    scaled: dict[str, LengthHistogram] = {}
    if all(w.denominator == 1 for w in m.values()):
        _check_fits(sum(int(m[s]) * max(raw_tokens[s], raw_docs[s]) for s in m))  # before any int64 product
        for s, g in sources.items():  # a weight past int64 on a source of no documents multiplies nothing
            counts = g.counts * int(m[s]) if g.counts.size else g.counts
            scaled[s] = LengthHistogram(g.lengths, counts, corpus=s)
        exact, K, error = True, Fraction(1), 0.0
    else:
        K, error = _float_scale(h, m, stream, window), 0.0

        def epochs(s: str) -> str:  # a share is given with the epochs it makes, the multiplier that is too small
            return f" ({_sci(m[s])} epochs)" if mixture.unit == "share" else ""

        for s, g in sources.items():
            counts, tail_error = _tail_rounded(g.counts, m[s] * K if g.tokens else Fraction(0))
            error = max(error, tail_error)
            if m[s] > 0 and g.documents and not counts.any():
                walked = ""
                if stream:  # the bound a walk puts on the mix, not the weight alone, leaves it out (a review)
                    bound = MAX_STREAM_DOCUMENTS if stream is True else int(stream)
                    rows = f" and {WALKED_MIX_ROWS:,} rows of {window}" if window is not None else ""
                    walked = f"; the mix is kept to {bound:,} documents{rows} for a walk"
                raise FreqlabError(
                    f"{s}: weight {_sci(mixture.weights[s])}{epochs(s)} is too small beside the others to keep one "
                    "document of it "
                    f"(give 0 to leave the source out{walked})"
                )
            scaled[s] = LengthHistogram(g.lengths, counts, corpus=s)
        exact = False
    info = MixtureInfo(mixture, {s: float(w) for s, w in m.items()}, raw_docs, raw_tokens, exact, K, error, corpus=h)
    mix = combine_sources(
        scaled,
        corpus=f"{h.corpus or 'histogram'} weighted by {mixture.name}",
        tokenizer=h.tokenizer,
        meta={**h.meta, "mixture": info.to_dict()},
    )
    if mix.documents == 0:
        raise FreqlabError(f"{mixture.name}: the weighted mix holds no documents")
    return mix, info


def _tail_rounded(counts: np.ndarray, factor: Fraction) -> tuple[np.ndarray, float]:
    """``counts · factor`` (by length, ascending) rounded to integers so that, for every n, the documents at least n
    tokens long are their weighted number rounded (exactly, in integers): a rare long document of weight 0.06 beside
    15 others of its kind is one document among the 16, not 16 zeros (rounding each count alone dropped every long
    tail a mix kept small for a walk: pack's effective length 4794 against 4904). Returns the counts and the largest
    relative error of those tail counts (at most 1: 1 where the longest documents, less than half a document in all,
    are rounded away, as a mix kept small for a walk often has them).
    """
    if not counts.size or factor == 0:
        return np.zeros_like(counts), 0.0
    tails = np.cumsum(counts[::-1], dtype=np.int64)  # documents at least as long as each length, longest first
    p, q = factor.numerator, factor.denominator
    rounded = (2 * tails.astype(object) * p + q) // (2 * q)  # round half up, in Python integers: no float64 rounding
    kept = np.diff(np.concatenate(([0], rounded))).astype(np.int64)[::-1]
    target = tails * float(factor)
    held = target > 0  # a tail of less than half a document rounded away counts 1 (the longest documents dropped)
    error = float(np.max(np.abs(rounded[held].astype(np.float64) - target[held]) / target[held])) if held.any() else 0.0
    return kept, error


def _float_scale(h: LengthHistogram, m: dict[str, Fraction], stream: bool | int, window: int | None = None) -> Fraction:
    """K: the smallest positive multiplier times K reaches RESOLUTION counts, unless int64 (or a stream) bounds it;
    a power of two (m_s·c·K is then as exact as m_s itself), computed exactly: weights span 1e-300..1e300, where
    float64 products underflow or overflow.
    """
    sources = h.sources or {}  # weighted_histogram's multipliers() checked that h has sources: this is h.sources
    K = RESOLUTION / min(w for w in m.values() if w > 0)
    tokens = sum((m[s] * g.tokens for s, g in sources.items()), Fraction(0))
    if tokens:
        K = min(K, Fraction(_COUNT_LIMIT, 4) / tokens)
    if stream:
        documents = sum((m[s] * g.documents for s, g in sources.items()), Fraction(0))
        bound = MAX_STREAM_DOCUMENTS if stream is True else int(stream)
        K = min(K, bound / documents) if documents else K
    if stream and window is not None:  # rows of the window walked too (natural's count: an upper bound of pack's)

        def rows(g: LengthHistogram) -> int:
            return int(np.sum(-(-g.lengths // window) * g.counts, dtype=object))

        walked = sum((m[s] * rows(g) for s, g in sources.items()), Fraction(0))
        K = min(K, WALKED_MIX_ROWS / walked) if walked else K
    exponent = K.numerator.bit_length() - K.denominator.bit_length()  # floor(log2 K) or one more
    if Fraction(2) ** exponent > K:
        exponent -= 1
    return Fraction(2) ** exponent


def _check_fits(tokens: int) -> None:
    if tokens >= _COUNT_LIMIT:
        raise FreqlabError(
            "the weighted mix holds 2^62 tokens or documents or more (a mix stays below 2^62, where every sum of its "
            "f is exact int64): use smaller epochs"
        )


def contribution_table(mix: LengthHistogram, info: MixtureInfo, L: int, regime: str, *, seed: int = 0) -> list[dict]:
    """Per source: raw documents and tokens, weight, share of training tokens in the mix and against the raw
    histogram (the upweighting), and the share of the mix's position mass at i >= 3L/4 the source supplies.

    The tail share adds each source's own f (exact for ``natural`` and ``truncate``, whose segments never span two
    documents; for other regimes each source is taken alone, which ``tail_share_basis`` says).
    """
    tail_from = (3 * L) // 4
    sources = mix.sources
    if sources is None:  # the AttributeError `mix.sources.items()` raised, said plainly
        raise AttributeError("contribution_table: mix.sources is None (mix is not a weighted_histogram result)")
    tails, tokens = {}, {}
    for s, g in sources.items():
        tokens[s] = g.tokens
        tails[s] = (
            exact_sum(position_frequency(g.lengths, g.counts, L, regime, seed=seed)[tail_from:]) if g.documents else 0
        )
    total_tokens, total_tail = sum(tokens.values()), sum(tails.values())
    raw_total = sum(info.raw_tokens.values())
    basis = "exact" if regime in ("natural", "truncate") else "each source alone"
    rows = []
    for s in sources:
        share = tokens[s] / total_tokens if total_tokens else 0.0
        raw_share = info.raw_tokens[s] / raw_total if raw_total else 0.0
        rows.append(
            {
                "source": s,
                "documents": info.raw_documents[s],
                "tokens": info.raw_tokens[s],
                "weight": float(info.mixture.weights[s]),
                "token_share": share,
                "raw_token_share": raw_share,
                "upweight": share / raw_share if raw_share else None,
                "tail_share": tails[s] / total_tail if total_tail else 0.0,
                "tail_share_basis": basis,
            }
        )
    return rows


def describe_table(rows: list[dict], info: MixtureInfo, L: int) -> list[str]:
    """The lines the CLI prints for :func:`contribution_table`."""
    # source labels come from the data: a terminal shows them, not obeys them
    head, *names = name_column([r["source"] for r in rows])
    unit, tail = info.mixture.unit, f"i >= {3 * L // 4}"
    lines = [
        printable(f"mix        {info.mixture.describe()}; {info.arithmetic}"),
        f"  {head}  {'tokens':>14}  {unit:>7}  {'mix share':>9}  {'x raw':>6}  {tail:>9}",
    ]
    for shown, r in zip(names, rows, strict=True):
        up = f"{r['upweight']:.2f}" if r["upweight"] is not None else "-"
        weight = f"{float(info.mixture.share_percent(r['source'])):.4g}%" if unit == "share" else f"{r['weight']:g}"
        lines.append(
            f"  {shown}  {r['tokens']:>14,}  {weight:>7}  {r['token_share']:>9.1%}  {up:>6}  {r['tail_share']:>9.1%}"
        )
    if rows and rows[0]["tail_share_basis"] != "exact":
        lines.append("  (the i >= 3L/4 column takes each source alone: under this regime sources share rows)")
    if info.mixture.citation:
        lines.append(f"  weights from {info.mixture.citation}")
    return lines
