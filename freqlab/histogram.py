"""LengthHistogram: document token lengths as sparse ``(length, count)`` int64 pairs, plus where they came from.

It is what ``freqlab scan`` produces and what every frequency computation consumes. On disk it is a
Parquet file with columns ``length``, ``count`` (and ``source`` when split by corpus source) and the
metadata under the Parquet key ``freqlab``.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from freqlab.arrays import (
    as_names,
    check_histogram,
    exact_dot,
    int64_tokens,
    real_number,
    summed_by_length,
    whole_count,
)
from freqlab.deprecation import renamed_method
from freqlab.display import (
    PALETTE,
    Chart,
    Display,
    Displayed,
    Series,
    clip,
    columns,
    count,
    counted,
    listed,
    nice_ticks,
    pad,
    percent,
    source_names,
    svg_chart,
)
from freqlab.errors import FreqlabError, brief
from freqlab.files import not_parquet, read_parquet, write_parquet
from freqlab.formats import (  # UNLABELLED_SOURCE: kept for import compatibility
    LENGTHS_FILE,
    METADATA_KEY,
    UNLABELLED_SOURCE,
)
from freqlab.formats import LENGTHS_FORMAT as FORMAT  # kept for import compatibility (and used here)
from freqlab.formats import LENGTHS_VERSION as FORMAT_VERSION  # kept for import compatibility (and used here)
from freqlab.paths import expand_home, printable
from freqlab.sizes import DEFAULT_TAU, position_label

if TYPE_CHECKING:  # type-only: the layer above, never imported here at run time
    import polars as pl

    from freqlab.frequency.result import PositionFrequency

_DENSE_LIMIT = 1 << 27  # above this maximum length, build with np.unique instead of np.bincount


def histogram_file(path: str | Path) -> Path:
    """``path`` (``~`` expanded), or the :data:`~freqlab.formats.LENGTHS_FILE` in it when ``path`` is the output
    folder of a scan that wrote one: ``freqlab freq OUT`` after ``freqlab scan --out OUT``.
    """
    path = Path(expand_home(path))
    inside = path / LENGTHS_FILE
    return inside if path.is_dir() and inside.is_file() else path


@dataclass(frozen=True, eq=False, repr=False)
class LengthHistogram(Displayed):
    """Histogram of document lengths in tokens: ``counts[k]`` documents have ``lengths[k]`` tokens.

    ``lengths`` is sorted, unique and >= 1; ``counts`` > 0; both int64. Empty documents are not a length
    (length 0 is not a segment) but are reported in ``empty_documents``; records skipped while reading
    are counted by reason in ``skipped``; ``documents_read`` accounts for every record read.

    Parameters
    ----------
    lengths, counts : np.ndarray
        int64 arrays of equal size: ``counts[k]`` documents of ``lengths[k]`` tokens. Build one with
        :meth:`from_lengths` or :meth:`from_counts` rather than by hand.
    corpus, tokenizer : str
        What was counted, and with which tokenizer (shown in reports and plots).
    documents_read : int or None
        Every record read, counted or not.
    skipped : dict of str to int
        Records skipped while reading, by reason.
    empty_documents : int
        Documents with no token.
    sources : dict of str to LengthHistogram, optional
        The same histogram split by source, when the corpus labels sources.
    meta : dict
        Free-form provenance written with the histogram.

    Notes
    -----
    The corpus holds D = Σ_k counts[k] documents and T = Σ_k counts[k] · lengths[k] tokens. Under the
    ``natural`` regime a document that fits the window L is one segment, so when every document fits, the
    position frequency is f(i) = Σ_k counts[k] · max(lengths[k] − i, 0) (STRING Eq. 2 [1]_).

    Position frequencies: ``h.frequency(L, regime)`` (a :class:`~freqlab.frequency.PositionFrequency`),
    ``h.frequency_table(L, regimes)`` (a polars DataFrame) and ``h.length_statistics(L, regimes)``.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> h = LengthHistogram.from_lengths([3, 5, 5, 2048], corpus="toy")
    >>> h.lengths.tolist(), h.counts.tolist(), h.documents, h.tokens
    ([3, 5, 2048], [1, 2, 1], 4, 2061)
    >>> (h + h).counts.tolist()
    [2, 4, 2]
    >>> h
    LengthHistogram 'toy': 4 documents, 2,061 tokens; lengths 3..2,048, median 5 (nearest rank)
    """

    lengths: np.ndarray
    counts: np.ndarray
    corpus: str = ""
    tokenizer: str = ""
    documents_read: int | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    empty_documents: int = 0
    sources: dict[str, LengthHistogram] | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("corpus", "tokenizer"):  # a name (corpus=5 failed later, in len()); None: none
            if getattr(self, name) is None:
                object.__setattr__(self, name, "")
            elif not isinstance(getattr(self, name), str):
                raise FreqlabError(f"{name} must be a string, got {getattr(self, name)!r}")
        # checked here, not where they are first used (a review: sources=True made repr, + and to_parquet raise
        # AttributeError; meta=None wrote a file read_parquet refused; a numpy integer in meta failed in json.dumps)
        for name in ("skipped", "meta"):
            value = getattr(self, name)
            if value is None:
                object.__setattr__(self, name, {})
            elif not isinstance(value, Mapping):
                raise FreqlabError(f"{name} must be a mapping (a dict), got {brief(value)}")
        object.__setattr__(self, "meta", _json_meta(self.meta))
        if not all(isinstance(reason, str) for reason in self.skipped):  # {1: 2} came back from a file as {'1': 2}
            raise FreqlabError(f"skipped must map reasons (strings) to counts, got {brief(self.skipped)}")
        if self.sources is not None:
            if not isinstance(self.sources, Mapping):
                raise FreqlabError(
                    f"sources must be a mapping of source name to LengthHistogram, got {brief(self.sources)}"
                )
            for name, h in self.sources.items():
                if not isinstance(name, str) or not isinstance(h, LengthHistogram):
                    raise FreqlabError(
                        f"sources must map source names (strings) to LengthHistograms, got {brief(name)}: {brief(h)}"
                    )
        lengths, counts = check_histogram(self.lengths, self.counts)
        _check_documents(counts)
        keep = counts > 0
        lengths, counts = lengths[keep], counts[keep]
        if lengths.size > 1 and not np.all(lengths[1:] > lengths[:-1]):
            order = np.argsort(lengths, kind="stable")
            lengths, counts = lengths[order], counts[order]
            if np.any(lengths[1:] == lengths[:-1]):
                raise FreqlabError("histogram lengths must be unique")
        lengths.setflags(write=False)  # copies of the arrays given (lengths[keep]): frozen, as the histogram is
        counts.setflags(write=False)  # (h.counts[0] = -7 made documents and tokens negative: a review)
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "empty_documents", whole_count(self.empty_documents, "empty_documents"))
        if self.documents_read is not None:
            object.__setattr__(self, "documents_read", whole_count(self.documents_read, "documents_read"))
        skipped = {reason: whole_count(n, f"skipped[{reason!r}]") for reason, n in self.skipped.items()}
        object.__setattr__(self, "skipped", skipped)
        accounted = self.documents + self.empty_documents + sum(self.skipped.values())
        if accounted >= 1 << 63:  # each below 2^63, their sum not: no scan reads as many
            raise FreqlabError(f"the documents counted, empty and skipped add up to {accounted:.3g}, past 2^63")
        if self.documents_read is None:
            object.__setattr__(self, "documents_read", accounted)
        elif self.documents_read < accounted:  # a hand-edited header: its report would say 2 read, 5 counted
            raise FreqlabError(
                f"documents_read = {self.documents_read:,} is fewer than the documents counted: {self.documents:,} "
                f"with tokens + {self.empty_documents:,} empty + {sum(self.skipped.values()):,} skipped"
            )

    def __eq__(self, other: object) -> bool:
        """The same counts, per source too, and the same provenance (a histogram and its Parquet round trip are
        equal; a source's own corpus and tokenizer names are not compared: a file names each source by its label).
        """
        if not isinstance(other, LengthHistogram):
            return NotImplemented
        if self is other:
            return True

        def same_counts(a: LengthHistogram, b: LengthHistogram) -> bool:  # arrays compared as arrays: no lists
            return (
                np.array_equal(a.lengths, b.lengths)
                and np.array_equal(a.counts, b.counts)
                and (a.skipped, a.empty_documents) == (b.skipped, b.empty_documents)
            )

        def holding(h: LengthHistogram) -> dict[str, LengthHistogram]:  # a source of nothing is no row of a file
            return {name: s for name, s in (h.sources or {}).items() if s.documents or s.empty_documents or s.skipped}

        mine, theirs = holding(self), holding(other)
        return (
            same_counts(self, other)
            and self.provenance() == other.provenance()
            and mine.keys() == theirs.keys()
            and all(same_counts(mine[name], theirs[name]) for name in mine)
        )

    def __hash__(self) -> int:
        """Of the counts alone (read-only arrays: equal histograms hash alike, and a hash never changes)."""
        if "_hash" not in self.__dict__:
            object.__setattr__(self, "_hash", hash((self.lengths.tobytes(), self.counts.tobytes())))
        return self.__dict__["_hash"]

    def __setstate__(self, state: dict) -> None:
        """Unpickled or deep-copied read-only, as made (pickle makes its arrays anew, writable: a review)."""
        self.__dict__.update(state)
        self.__dict__.pop("_hash", None)  # str and bytes hash differently in another process (PYTHONHASHSEED)
        self.lengths.setflags(write=False)
        self.counts.setflags(write=False)

    # construction -----------------------------------------------------------------------------------------
    @classmethod
    def from_lengths(cls, lengths, **metadata) -> LengthHistogram:
        """Count an array of document lengths (>= 1, of any shape: a column taken as ``df[["len"]].values`` too)
        with ``np.bincount``.
        """
        values = np.asarray(lengths).reshape(-1)  # every value is one document: no pairing to get wrong
        if values.size == 0:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), **metadata)
        values, _ = check_histogram(values, np.ones(values.shape, np.int64))
        if int(values.max()) < _DENSE_LIMIT:
            dense = np.bincount(values)
            nonzero = np.flatnonzero(dense)
            return cls(nonzero.astype(np.int64), dense[nonzero].astype(np.int64), **metadata)
        unique, counts = np.unique(values, return_counts=True)
        return cls(unique, counts.astype(np.int64), **metadata)

    @classmethod
    def from_counts(cls, lengths, counts, **metadata) -> LengthHistogram:
        """Build from ``(length, count)`` pairs; repeated lengths are summed."""
        lengths, counts = check_histogram(lengths, counts)
        _check_documents(counts)  # before repeated lengths are summed in int64
        if lengths.size and np.unique(lengths).size != lengths.size:
            lengths, counts = summed_by_length(lengths, counts)
        return cls(lengths, counts, **metadata)

    def with_meta(self, **changes) -> LengthHistogram:
        """A copy with some metadata fields changed."""
        return replace(self, **changes)

    # totals -----------------------------------------------------------------------------------------------
    @property
    def documents(self) -> int:
        """Documents with at least one token."""
        return int(self.counts.sum())

    @property
    def tokens(self) -> int:
        """Total tokens, exact."""
        return exact_dot(self.lengths, self.counts)

    # algebra ----------------------------------------------------------------------------------------------
    def merge(self, other: LengthHistogram) -> LengthHistogram:
        """Sum of two histograms (counts, skips, empties and per-source splits add up). Their lengths must be in
        the same units (:func:`check_same_units`: tokenizer, special tokens, sampling); the sum's metadata keeps
        what both say alike (:func:`agreed_meta`).

        >>> a = LengthHistogram.from_lengths([3], meta={"tokenizer_vocab_hash": "aa", "seed": 1})
        >>> (a + LengthHistogram.from_lengths([5], meta={"tokenizer_vocab_hash": "aa", "seed": 2})).meta
        {'tokenizer_vocab_hash': 'aa'}
        """
        if not isinstance(other, LengthHistogram):
            raise FreqlabError(f"can only merge a LengthHistogram, got {type(other).__name__}")
        check_same_units([("the left histogram", self), ("the right one", other)])
        lengths = np.concatenate([self.lengths, other.lengths])
        counts = np.concatenate([self.counts, other.counts])
        merged = LengthHistogram.from_counts(lengths, counts)
        return LengthHistogram(
            merged.lengths,
            merged.counts,
            corpus=_join(self.corpus, other.corpus),
            tokenizer=_join(self.tokenizer, other.tokenizer),
            # __post_init__ fills documents_read, so it is an int on every instance
            documents_read=cast(int, self.documents_read) + cast(int, other.documents_read),
            skipped=dict(Counter(self.skipped) + Counter(other.skipped)),
            empty_documents=self.empty_documents + other.empty_documents,
            sources=_merge_sources(self, other),
            meta=agreed_meta([self.meta, other.meta]),
        )

    __add__ = merge

    def __radd__(self, other: object) -> LengthHistogram:
        """``0 + h`` is ``h``: ``sum(histograms)`` adds them (it starts from 0; a review found it refused)."""
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def scale_to_tokens(self, tokens: int) -> LengthHistogram:
        """The same length distribution scaled to a budget of about ``tokens`` tokens.

        Each count becomes round(count · T / tokens) (exact rational arithmetic, half to even); lengths
        whose count rounds to zero drop out, so the new total is T up to rounding. The result is one histogram: its
        sources, empty and skipped documents are not carried over (scale a source's own histogram for a mix).
        """
        number = not isinstance(tokens, bool) and isinstance(tokens, int | float | np.integer | np.floating)
        if not number or not tokens >= 1 or (isinstance(tokens, float | np.floating) and not math.isfinite(tokens)):
            raise FreqlabError(f"token budget must be positive, a whole count, got {tokens!r}")
        if tokens != int(tokens):  # 0.5 or 1e9 + 0.5 tokens: scaled as if whole, silently (0.5 gave no document)
            raise FreqlabError(f"token budget must be a whole count, got {tokens!r}")
        if self.tokens == 0:
            raise FreqlabError("cannot scale an empty histogram")
        factor = Fraction(int(tokens), self.tokens)
        scaled = [round(int(c) * factor) for c in self.counts]
        if scaled and max(scaled) >= 1 << 63:
            raise FreqlabError(f"scaled to {brief(int(tokens))} tokens, a length's count would pass 2^63 documents")
        counts = np.array(scaled, dtype=np.int64)
        meta = {**self.meta, "scaled_from_tokens": self.tokens}
        return LengthHistogram(self.lengths, counts, corpus=self.corpus, tokenizer=self.tokenizer, meta=meta)

    # summaries --------------------------------------------------------------------------------------------
    def quantile(self, q: float) -> int:
        """Nearest-rank quantile: the smallest length such that at least a fraction q of documents are that long
        or shorter (the ceil(q·n)-th smallest length, never an interpolated value; q = 0 gives the smallest).

        >>> LengthHistogram.from_lengths([1, 2, 3, 4]).quantile(0.5)   # ceil(0.5 · 4) = 2nd smallest
        2
        """
        number = real_number(q)
        if number is None or not 0.0 <= number <= 1.0:  # nan too
            raise FreqlabError(f"quantile must be a number in [0, 1], got {brief(q)}")
        if self.documents == 0:
            return 0
        cumulative = np.cumsum(self.counts)
        # exact: q as the decimal it is written as (0.07 of 300 documents is the 21st, not float's 22nd; a Decimal or
        # Fraction as it is), and a rank past 2^53 is not rounded (the median of 2^61 + 2^61 + 1 documents is the
        # (2^61 + 1)-th)
        exact = Fraction(q) if isinstance(q, (Fraction, Decimal, int)) else Fraction(repr(float(number)))
        target = max(1, math.ceil(exact * int(cumulative[-1])))
        return int(self.lengths[np.searchsorted(cumulative, target, side="left")])

    def int64_tokens(self) -> int:
        """Its tokens, the count every position frequency is computed in: a FreqlabError from 2^63 on (int64).

        >>> LengthHistogram.from_counts([3, 5], [2, 7]).int64_tokens()
        41
        """
        return int64_tokens(self.lengths, self.counts)

    def share_of_tokens_longer_than(self, L: int) -> float:
        """Share of all tokens that sit in documents longer than L (a number >= 0: 3 * L / 4 too)."""
        bound = real_number(L)
        if bound is None or not bound >= 0:  # nan gave 0.0, -1 gave 1.0 (a review)
            raise FreqlabError(f"L must be a number >= 0, got {brief(L)}")
        total = self.tokens
        if total == 0:
            return 0.0
        long = self.lengths > bound
        return exact_dot(self.lengths[long], self.counts[long]) / total

    def length_statistics(
        self,
        L: int | None = None,
        regimes: Sequence[str] = ("natural",),
        *,
        tokens: float | None = None,
        tau: float = DEFAULT_TAU,
        seed: int = 0,
    ) -> dict:
        """Documents, tokens, mean, median, percentiles (nearest rank: :meth:`quantile`), max; with a window ``L``,
        the share of tokens in documents longer than L and, under ``frequency``, one
        :meth:`PositionFrequency.regime_row <freqlab.frequency.PositionFrequency.regime_row>` per regime (mass
        shares, f at L/4, L/2, 3L/4, and the effective length when a budget ``tokens`` is given). JSON-serialisable.

        >>> s = LengthHistogram.from_lengths([4096] * 10).length_statistics(2048, tokens=40960, tau=1000)
        >>> s["median"], s["quantiles"], s["frequency"][0]["effective_length"]
        (4096, 'nearest-rank', 1998)
        """
        documents = self.documents
        out: dict[str, Any] = {
            "corpus": self.corpus,
            "tokenizer": self.tokenizer,
            "documents_read": self.documents_read,
            "documents": documents,
            "empty_documents": self.empty_documents,
            "skipped": dict(self.skipped),
            "tokens": self.tokens,
            "distinct_lengths": int(self.lengths.size),
            # no document, no length: None (JSON null), not a mean or median of 0 that reads as documents of 0 tokens
            "mean": self.tokens / documents if documents else None,
            "median": self.quantile(0.5) if documents else None,
            "percentiles": {
                f"p{p}": self.quantile(p / 100) if documents else None for p in (1, 10, 25, 50, 75, 90, 99)
            },
            "quantiles": "nearest-rank",
            "min": int(self.lengths[0]) if documents else None,
            "max": int(self.lengths[-1]) if documents else None,
        }
        if L is not None:
            if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1:  # "2K" met int() (a review)
                raise FreqlabError(f"L must be a positive integer, got {brief(L)}")
            out["L"] = int(L)
            out["share_tokens_longer_than_L"] = self.share_of_tokens_longer_than(L)
            out["share_documents_longer_than_L"] = (
                int(self.counts[self.lengths > L].sum()) / documents if documents else 0.0
            )
            # no document: f is 0 everywhere, its shares undefined: no rows, but the same keys
            out["frequency"] = [
                self.frequency(L, r, seed=seed).regime_row(tokens, tau)
                for r in as_names(regimes, "regime", _REGIME_EXAMPLES, allow_none=True)
                if documents
            ]
        if self.sources:
            out["sources"] = {
                name: {"documents": h.documents, "tokens": h.tokens} for name, h in sorted(self.sources.items())
            }
        return out

    summary = renamed_method("summary", "length_statistics")  # deprecated: the old name goes in 0.3

    # persistence ------------------------------------------------------------------------------------------
    def to_frame(self) -> pl.DataFrame:
        """Rows ``(length, count)``, or ``(source, length, count)`` when split by source."""
        import polars as pl

        if self.sources:
            # typed: a source of empty or skipped documents alone has no row (its counts are in the header)
            schema = {"source": pl.Utf8, "length": pl.Int64, "count": pl.Int64}
            frames = [
                pl.DataFrame({"source": [name] * h.lengths.size, "length": h.lengths, "count": h.counts}, schema)
                for name, h in sorted(self.sources.items())
            ]
            return pl.concat(frames)
        return pl.DataFrame({"length": self.lengths, "count": self.counts})

    def parquet_header(self) -> dict:
        """The JSON header a Parquet file of this histogram carries (:data:`freqlab.formats.LENGTHS`)."""
        return {"format": FORMAT, "version": FORMAT_VERSION, **self.provenance()}

    def to_parquet(self, path: str | Path) -> Path:
        """Write the histogram and its metadata to a Parquet file (atomically; ``~`` is the home folder, as for
        :meth:`read_parquet`).
        """
        path = expand_home(path)
        write_parquet(path, self.to_frame(), self.parquet_header())
        return Path(path)

    @classmethod
    def read_parquet(cls, path: str | Path) -> LengthHistogram:
        """Load a histogram written by :meth:`to_parquet` (or the ``lengths.parquet`` of a scan's output folder,
        ``path`` being that folder); anything else is a clear FreqlabError.
        """
        path = histogram_file(path)
        if not path.is_file():  # a review: /dev/null was "no such histogram file"
            what = (
                f"a folder, not a histogram file (nor a scan's --out, whose {LENGTHS_FILE} is a file)"
                if path.is_dir() and (path / LENGTHS_FILE).exists()
                else f"a folder without {LENGTHS_FILE} (give a histogram or a scan's --out)"
                if path.is_dir()
                else "not a regular file"
                if path.exists()
                else "no such histogram file"
            )
            raise FreqlabError(f"{path}: {what}")
        try:
            frame, metadata = read_parquet(path)
        except PermissionError as exc:  # the file's type is not in question
            raise FreqlabError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
        except ImportError:  # a broken installation, not a bad file: said as it is
            raise
        except Exception as exc:  # polars raises several types for corrupt files
            what = not_parquet(path) or f"not a readable Parquet file ({type(exc).__name__})"
            raise FreqlabError(f"{path}: {what}; a length histogram is the lengths.parquet a scan writes") from None
        if METADATA_KEY in metadata:  # there, but not a header: damaged, not another tool's table (a review)
            try:
                header = json.loads(metadata[METADATA_KEY])
            except (ValueError, TypeError) as exc:
                raise FreqlabError(f"{path}: its 'freqlab' metadata is not JSON ({exc}); the file is damaged") from None
            if not isinstance(header, dict):
                raise FreqlabError(
                    f"{path}: its 'freqlab' metadata is {brief(header)}, not a header; the file is damaged"
                )
        else:
            raise FreqlabError(  # another tool's (length, count) table: say how to make it one (a review)
                f"{path}: not a freqlab length histogram (no 'freqlab' metadata); a table of lengths and counts "
                "becomes one with LengthHistogram.from_counts(lengths, counts).to_parquet(path)"
            )
        if header.get("format") != FORMAT:
            raise FreqlabError(
                f"{path}: a freqlab file of format {header.get('format')!r}, not a length histogram ({FORMAT!r}: "
                "the lengths.parquet a scan writes)"
            )
        _check_header(header, path)
        if not {"length", "count"} <= set(frame.columns):
            raise FreqlabError(f"{path}: a freqlab histogram needs columns 'length' and 'count'")
        for column in frame.columns:
            if frame[column].null_count():
                raise FreqlabError(f"{path}: column {column!r} has {frame[column].null_count()} missing value(s)")
        # labels 1, 2 were refused as "corpus must be a string", a field the file has not (a review)
        if "source" in frame.columns and frame["source"].dtype.to_python() is not str:
            raise FreqlabError(f"{path}: column 'source' holds {frame['source'].dtype}, not text (the source labels)")
        keys = ["source", "length"] if "source" in frame.columns else ["length"]
        counted = frame.group_by(keys).len()
        repeated = counted.filter(counted["len"] > 1).sort(keys).head(1)
        if repeated.height:  # a file edited or joined by hand: summed silently before, or said as a count mismatch
            where = f" of source {repeated['source'][0]!r}" if "source" in keys else ""
            raise FreqlabError(
                f"{path}: length {repeated['length'][0]}{where} is on {repeated['len'][0]} rows: a histogram file "
                "holds each length once (add the counts into one row)"
            )
        try:
            return cls._from_frame(frame, header)
        except FreqlabError as exc:  # a bad value: named with the file
            message = str(exc)
            raise FreqlabError(message if message.startswith(f"{path}:") else f"{path}: {message}") from None

    @classmethod
    def _from_frame(cls, frame: pl.DataFrame, header: dict) -> LengthHistogram:
        common = {
            "corpus": header.get("corpus", ""),
            "tokenizer": header.get("tokenizer", ""),
            "meta": header.get("meta", {}),
        }
        if "source" not in frame.columns:
            return cls.from_counts(
                frame["length"].to_numpy(),
                frame["count"].to_numpy(),
                documents_read=header.get("documents_read"),
                skipped=header.get("skipped", {}),
                empty_documents=header.get("empty_documents", 0),
                **common,
            )
        per_source = header.get("sources") or {}
        parts = {name: part for (name,), part in frame.group_by(["source"], maintain_order=True)}
        sources = {}
        for name in [*parts, *(name for name in per_source if name not in parts)]:  # without rows: header only
            extra, part = per_source.get(name, {}), parts.get(name)
            sources[name] = cls.from_counts(
                np.zeros(0, np.int64) if part is None else part["length"].to_numpy(),
                np.zeros(0, np.int64) if part is None else part["count"].to_numpy(),
                skipped=extra.get("skipped", {}),
                empty_documents=extra.get("empty_documents", 0),
                corpus=name,
            )
        return combine_sources(
            sources,
            documents_read=header.get("documents_read"),
            skipped=header.get("skipped", {}),
            empty_documents=header.get("empty_documents", 0),
            **common,
        )

    # position frequency --------------------------------------------------------------------------------------
    def frequency(self, L: int, regime: str = "natural", *, seed: int = 0, megatron=None) -> PositionFrequency:
        """f(i) for 0 <= i < L under ``regime`` (STRING Eq. 2, exact int64), as a
        :class:`~freqlab.frequency.PositionFrequency` that knows this histogram's corpus and tokenizer
        (``np.asarray`` of it is the array :func:`freqlab.position_frequency` returns).

        >>> LengthHistogram.from_counts([3, 6], [2, 1]).frequency(4).f.tolist()   # 6 -> segments 4 + 2
        [12, 8, 4, 1]
        """
        # the one sanctioned upward call (histogram < frequency): the computation lives in freqlab.frequency,
        # this method is the short spelling the API offers (allow-listed in tests/test_layers.py)
        from freqlab.frequency.result import PositionFrequency

        return PositionFrequency.from_histogram(self, L, regime, seed=seed, megatron=megatron)

    def frequency_table(
        self,
        L: int,
        regimes: str | Sequence[str] = ("natural", "uniform", "concat"),
        *,
        seed: int = 0,
        megatron=None,
    ):
        """f across regimes (one name or several) as a long polars DataFrame, columns ``position``, ``regime``,
        ``f`` (L rows per regime, int64 f): ready for ``pivot``, plotting or Parquet. ``megatron``: the
        :class:`~freqlab.frequency.megatron_replay.MegatronOptions` of the ``megatron`` regime.

        >>> t = LengthHistogram.from_counts([3, 6], [2, 1]).frequency_table(4, ["natural", "concat"])
        >>> t.filter(t["position"] == 1).rows()
        [(1, 'natural', 8), (1, 'concat', 9)]
        """
        import polars as pl

        frames = [
            self.frequency(L, r, seed=seed, megatron=megatron).to_frame()
            for r in as_names(regimes, "regime", _REGIME_EXAMPLES)
        ]
        return pl.concat(frames)

    def report(self, L: int = 2048, *, corpus: LengthHistogram | None = None) -> str:
        """The table ``freqlab stats`` prints: corpus, tokenizer, documents, tokens, mean, median and percentiles
        (nearest rank: the ceil(q·n)-th smallest length), max, the share of tokens in documents longer than ``L``,
        and per source its documents and tokens. ``corpus``: the histogram a weighted mix was made from, whose
        counts are shown (the lengths are this mix's).
        """
        if L is None:  # length_statistics takes None (no window); the table has a row for L (a review: KeyError)
            raise FreqlabError("report needs a window L (a positive integer): its last row is the tokens past L")
        summary, counts = self.length_statistics(L), (self if corpus is None else corpus).length_statistics(L)
        rows = [
            ("corpus", counts["corpus"] or "-"),
            ("tokenizer", counts["tokenizer"] or "-"),
            ("documents read", f"{counts['documents_read']:,}"),
            ("documents with tokens", f"{counts['documents']:,}"),
            ("empty documents", f"{counts['empty_documents']:,}"),
            ("skipped", ", ".join(f"{k}: {v:,}" for k, v in counts["skipped"].items()) or "0"),
            ("tokens", f"{counts['tokens']:,}"),
            *([("lengths below", "of the mix the weights make")] if corpus is not None else []),
            ("mean length", "-" if summary["mean"] is None else f"{summary['mean']:,.1f}"),
            ("median length", _count(summary["median"])),
            ("p10 / p90 / p99", " / ".join(_count(summary["percentiles"][p]) for p in ("p10", "p90", "p99"))),
            ("quantiles", "nearest rank (the ceil(q·n)-th smallest length)"),
            ("max length", _count(summary["max"])),
            (f"tokens in documents > {L}", percent(summary["share_tokens_longer_than_L"])),
        ]
        # names and labels come from the data and the command line: a terminal shows them, not obeys them
        rows = [(printable(name), printable(value)) for name, value in rows]
        sources = counts.get("sources", {})  # shown as every table shows them (a review: "" and " " alike)
        for shown, info in zip(source_names(list(sources)), sources.values(), strict=True):
            rows.append((f"source {shown}", f"{info['documents']:,} documents, {info['tokens']:,} tokens"))
        width = max(columns(name) for name, _ in rows)
        return "\n".join(f"{pad(name, width)}  {value}" for name, value in rows)

    def write_frequencies(
        self,
        path: str | Path,
        Ls: Sequence[int],
        regimes: Sequence[str],
        *,
        seed: int = 0,
        megatron=None,
        corpus: LengthHistogram | None = None,
        mixture: dict | None = None,
    ) -> Path:
        """Write f for every (L, regime) to one Parquet file (:data:`freqlab.formats.FREQUENCY`, what ``freqlab freq
        --out`` writes): columns L, regime, position, frequency; its ``freqlab`` metadata key holds the format and
        version, the histogram's provenance (as ``lengths.parquet`` does; ``corpus``: the histogram whose counts a
        weighted mix was made from, with ``mixture`` its description), the windows, regimes and seed.
        ``megatron``: the :class:`~freqlab.frequency.megatron_replay.MegatronOptions` of the ``megatron`` regime.
        """
        import polars as pl

        from freqlab.formats import FREQUENCY_FORMAT, FREQUENCY_VERSION

        corpus = self if corpus is None else corpus
        frames = [
            self.frequency_table(L, regimes, seed=seed, megatron=megatron)
            .rename({"f": "frequency"})
            .select(pl.lit(L, pl.Int64).alias("L"), "regime", "position", "frequency")
            for L in Ls
        ]
        table = pl.concat(frames)  # its regimes as its rows name them: "megatron (as concat)" from a histogram alone
        # unique first: every row's label listed took ~90 bytes a position (`freq --L 256M --out` was killed, a review)
        labels = table["regime"].unique(maintain_order=True).to_list() if table.height else list(regimes)
        header = {
            "format": FREQUENCY_FORMAT,
            "version": FREQUENCY_VERSION,
            "histogram": {"documents": corpus.documents, "tokens": corpus.tokens, **corpus.provenance()},
            **({"mixture": mixture} if mixture is not None else {}),
            "L": list(Ls),
            "regimes": labels,
            "seed": seed,
            **({"megatron": megatron.describe()} if megatron is not None else {}),
        }
        path = expand_home(path)
        write_parquet(path, table, header)
        return Path(path)

    def provenance(self) -> dict:
        """Where the counts came from, JSON-serialisable: corpus, tokenizer, documents read, skipped by reason,
        empty documents, ``meta`` (tokenizer hash, sampling, limits) and per-source skips. The Parquet files
        freqlab writes carry it (``lengths.parquet``, ``freqlab freq --out``).
        """
        return {
            "corpus": self.corpus,
            "tokenizer": self.tokenizer,
            "documents_read": self.documents_read,
            "skipped": self.skipped,
            "empty_documents": self.empty_documents,
            "meta": self.meta,
            "sources": _source_metadata(self.sources),
        }

    # display -------------------------------------------------------------------------------------------------
    def _display(self) -> Display:
        return histogram_display(self)


_REGIME_EXAMPLES = "natural, concat, pack, ..."  # named in a refused list of regimes (the list is frequency's)


def _json_meta(meta: Mapping) -> dict:
    """``meta`` as the JSON a Parquet header holds: numpy scalars and arrays as Python numbers and lists, tuples as
    lists (as a round trip reads them back); anything JSON has no form for is a FreqlabError naming it.
    """

    def plain(value, where: str):
        if isinstance(value, np.generic | np.ndarray):
            return value.tolist()
        if isinstance(value, Mapping):
            if not all(isinstance(key, str) for key in value):
                raise FreqlabError(f"meta{where} has a key that is no string: {brief(list(value))}")
            return {key: plain(item, f"{where}[{key!r}]") for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [plain(item, f"{where}[{k}]") for k, item in enumerate(value)]
        if value is None or isinstance(value, str | int | float):  # bool is an int
            return value
        raise FreqlabError(f"meta{where} is {brief(value)}: a histogram's meta holds JSON values (str, int, float, "
                           "bool, None, lists and dicts of them)")  # fmt: skip

    try:
        made = plain(meta, "")
    except RecursionError:  # a dict holding itself
        raise FreqlabError("meta holds itself (a cycle): a histogram's meta holds JSON values") from None
    try:  # numpy scalars whose Python values JSON has no form for: datetime64, complex, bytes
        json.dumps(made)
    except (TypeError, ValueError) as exc:
        raise FreqlabError(f"meta holds a value JSON has no form for ({exc})") from None
    return made


def _count(n: int | None) -> str:
    """``1,234``, or ``-`` for a statistic a histogram of no documents has not."""
    return "-" if n is None else f"{n:,}"


def _check_documents(counts: np.ndarray) -> None:
    """A FreqlabError when the documents counted reach 2^63, where their int64 sum would wrap."""
    if counts.size and int(counts.max()) * counts.size >= 1 << 63 and (total := sum(counts.tolist())) >= 1 << 63:
        raise FreqlabError(f"the histogram counts {total:,} documents, 2^63 or more: no corpus holds that many")


#: what a histogram's lengths are counted in: two that differ here hold lengths that do not add up
UNITS = {  # key -> (what differs, why the counts do not add up)
    "tokenizer_vocab_hash": (
        "tokenizers",
        "their lengths are in different units; one tokenizer loaded from two files, a tokenizer.json and a "
        "tokenizer.model, hashes two ways: scan both with one file",
    ),
    "special_tokens_counted": ("special-token settings", "their lengths differ by the special tokens"),
    "sample_rate": (
        "sampling rates",
        "a sample's counts are a share of a whole scan's: scale one to the other's tokens first (scale_to_tokens)",
    ),
}
#: what a schedule's stages must agree on: each stage is scaled to its own budget, so a sample's rate cancels there
LENGTH_UNITS = ("tokenizer_vocab_hash", "special_tokens_counted")


def check_same_units(named: Sequence[tuple[str, LengthHistogram]], keys: Sequence[str] = tuple(UNITS)) -> None:
    """Refuse histograms whose counts do not add up (FreqlabError naming two of them and the key): another
    tokenizer's vocabulary, special tokens counted or not, another sampling rate (a 10% sample beside a whole scan;
    ``keys`` :data:`LENGTH_UNITS` leaves it out). A value a histogram does not know (made in Python, a tokenizer
    without a hash) agrees with any.

    >>> a = LengthHistogram.from_lengths([3], meta={"tokenizer_vocab_hash": "aa"})
    >>> b = LengthHistogram.from_lengths([3], meta={"tokenizer_vocab_hash": "bb"})
    >>> try:
    ...     check_same_units([("a", a), ("b", b)])
    ... except FreqlabError as error:
    ...     print(str(error)[:60])
    a (tokenizer_vocab_hash 'aa') and b ('bb'): histograms of di
    """
    for key in keys:
        what, why = UNITS[key]
        first: tuple[str, object] | None = None
        for name, histogram in named:
            if (value := _unit(histogram.meta, key)) is _UNKNOWN:
                continue
            if first is None:
                first = (name, value)
            elif value != first[1]:
                raise FreqlabError(
                    f"{first[0]} ({key} {first[1]!r}) and {name} ({value!r}): histograms of different {what} do not "
                    f"add up ({why})"
                )


_UNKNOWN = object()


def _unit(meta: dict, key: str) -> object:
    """The value of a unit ``key`` in ``meta``, or :data:`_UNKNOWN` (not recorded, or None where None is unknown)."""
    if key == "sample_rate" and "scaled_from_tokens" in meta:  # scaled to a budget: whole counts, as a scan's
        return None
    if key not in meta:
        return _UNKNOWN
    value = meta[key]
    if key == "sample_rate":
        return None if value == 1 else value  # keeping every document is no sampling: a scan records None
    return _UNKNOWN if value is None else value


def agreed_meta(metas: Sequence[dict]) -> dict:
    """The metadata of a sum of histograms: each unit key's known value (they were checked to agree), and every
    other key that all of them record alike (two scans' limits or seeds that differ, or an index one of them was
    read from, are no one scan's: left out).

    >>> limited = {"tokenizer_vocab_hash": "a", "seed": 0, "max_docs": 1}
    >>> agreed_meta([{"tokenizer_vocab_hash": None, "seed": 0}, limited])
    {'tokenizer_vocab_hash': 'a', 'seed': 0}
    """
    merged: dict = {}
    for key in dict.fromkeys(key for meta in metas for key in meta):
        if key in UNITS:  # the known value (they agree), else none: a scaled sample's raw rate is no rate of the sum
            known = [value for meta in metas if (value := _unit(meta, key)) is not _UNKNOWN]
            if known:
                merged[key] = known[0]
            elif all(key in meta and meta[key] is None for meta in metas) and key != "sample_rate":
                merged[key] = None
        elif all(key in meta and meta[key] == metas[0][key] for meta in metas):
            merged[key] = metas[0][key]
    return merged


def combine_sources(sources: dict[str, LengthHistogram], **metadata) -> LengthHistogram:
    """A histogram whose totals are the sum of per-source histograms, keeping the split. The sources' lengths must be
    in the same units (:func:`check_same_units`, as for ``+``); without ``meta``, the result's is what every source
    records alike; ``skipped`` and ``empty_documents`` not given are the sources' summed, and ``documents_read`` too
    when none of the three is given (every document read is accounted for, as by ``+``).

    >>> a = LengthHistogram.from_counts([5], [2], empty_documents=3, skipped={"null-text": 1})
    >>> both = combine_sources({"a": a, "b": LengthHistogram.from_counts([7], [1], empty_documents=4)})
    >>> both.documents_read, both.empty_documents, both.skipped
    (11, 7, {'null-text': 1})
    """
    check_same_units([(f"source {name!r}", h) for name, h in sources.items()])
    if "meta" not in metadata and sources:
        metadata["meta"] = agreed_meta([h.meta for h in sources.values()])
    given = {"documents_read", "skipped", "empty_documents"} & metadata.keys()  # the caller's totals, kept
    metadata.setdefault("empty_documents", sum(h.empty_documents for h in sources.values()))
    metadata.setdefault("skipped", dict(sum((Counter(h.skipped) for h in sources.values()), Counter())))
    if not given:  # else counted from what is given (documents_read below it is refused)
        metadata["documents_read"] = sum(cast(int, h.documents_read) for h in sources.values())
    lengths = [h.lengths for h in sources.values()]
    counts = [h.counts for h in sources.values()]
    total = LengthHistogram.from_counts(
        np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
        np.concatenate(counts) if counts else np.zeros(0, np.int64),
    )
    return LengthHistogram(total.lengths, total.counts, sources=dict(sorted(sources.items())), **metadata)


def as_histogram(histogram: LengthHistogram | str | Path) -> LengthHistogram:
    """A LengthHistogram, read from Parquet when given a path (:meth:`LengthHistogram.read_parquet`).

    >>> as_histogram(LengthHistogram.from_lengths([3, 5])).documents
    2
    """
    if isinstance(histogram, LengthHistogram):
        return histogram
    if not isinstance(histogram, str | Path):  # 0 met os.fspath: "expected str, bytes or os.PathLike" (a review)
        raise FreqlabError(
            f"histogram must be a LengthHistogram or the path of its Parquet file, got {brief(histogram)}"
        )
    return LengthHistogram.read_parquet(histogram)


def _source_metadata(sources: dict[str, LengthHistogram] | None) -> dict:
    if not sources:
        return {}
    return {
        name: {"skipped": h.skipped, "empty_documents": h.empty_documents}
        for name, h in sources.items()
        if h.skipped or h.empty_documents
    }


def _merge_sources(a: LengthHistogram, b: LengthHistogram) -> dict[str, LengthHistogram] | None:
    if not a.sources and not b.sources:
        return None
    # a histogram without a split contributes to an explicit unlabelled source, so nothing is lost
    left = a.sources or {UNLABELLED_SOURCE: a.with_meta(sources=None)}
    right = b.sources or {UNLABELLED_SOURCE: b.with_meta(sources=None)}
    merged = dict(left)
    for name, h in right.items():
        merged[name] = merged[name].merge(h) if name in merged else h
    return dict(sorted(merged.items()))


def _join(a: str, b: str) -> str:
    if not a or a == b:
        return b
    if not b:
        return a
    return f"{a} + {b}"


def histogram_display(h: LengthHistogram) -> Display:
    """The repr and HTML of a histogram: totals, nearest-rank quantiles, sources, and the documents and tokens per
    length bin (powers of two) as a small bar chart.
    """
    title = f"LengthHistogram {clip(h.corpus, 80)!r}" if h.corpus else "LengthHistogram"
    if h.tokenizer:
        title += f" ({clip(h.tokenizer, 60)})"
    documents = h.documents
    rows = [
        ("corpus", h.corpus or "-"),
        ("tokenizer", h.tokenizer or "-"),
        ("documents read", count(h.documents_read)),
        ("documents with tokens", count(documents)),
        ("empty documents", count(h.empty_documents)),
        ("skipped", listed([f"{reason}: {n:,}" for reason, n in sorted(h.skipped.items())]) or "0"),
        ("tokens", count(h.tokens)),
    ]
    lines = []
    if h.sources:
        lines.append("sources: " + listed([f"{name} {part.documents:,}" for name, part in h.sources.items()]))
    dropped = [f"{n:,} {reason}" for reason, n in sorted(h.skipped.items())]
    if h.empty_documents:
        dropped.append(f"{h.empty_documents:,} empty")
    if dropped:
        lines.append("not counted: " + listed(dropped))
    if documents == 0:
        return Display(title, "no documents", lines, rows)
    p = {q: h.quantile(q / 100) for q in (10, 50, 90, 99)}
    headline = (
        f"{counted(documents, 'document')}, {counted(h.tokens, 'token')}; lengths "
        f"{int(h.lengths[0]):,}..{int(h.lengths[-1]):,}, median {p[50]:,} (nearest rank)"
    )
    rows += [
        ("distinct lengths", count(h.lengths.size)),
        ("mean length", f"{h.tokens / documents:,.1f}"),
        ("min / median / max", f"{int(h.lengths[0]):,} / {p[50]:,} / {int(h.lengths[-1]):,}"),
        ("p10 / p90 / p99 (nearest rank)", f"{p[10]:,} / {p[90]:,} / {p[99]:,}"),
    ]
    table = None
    if h.sources:
        total = h.tokens or 1
        table = (
            ("source", "documents", "tokens", "share of tokens"),
            [(n, count(s.documents), count(s.tokens), percent(s.tokens / total)) for n, s in h.sources.items()],
        )
    return Display(title, headline, lines, rows, table, figure=_length_bars(h))


def _length_bars(h: LengthHistogram) -> str:
    """Share of documents (blue) and of tokens (orange) per length bin [2^k, 2^(k+1)), on a log2 axis."""
    bins = np.floor(np.log2(h.lengths)).astype(np.int64)
    top = int(bins.max()) + 1
    docs = np.bincount(bins, weights=h.counts.astype(np.float64), minlength=top)
    toks = np.bincount(bins, weights=(h.lengths * h.counts).astype(np.float64), minlength=top)
    docs, toks = 100 * docs / docs.sum(), 100 * toks / max(toks.sum(), 1)
    lefts = 2.0 ** np.arange(top)
    middles = lefts * np.sqrt(2)
    peak = float(max(docs.max(), toks.max()))
    ticks = [(2.0**k, position_label(2**k)) for k in range(0, top + 1, max(1, (top + 5) // 6))]
    chart = Chart(
        (1, 2.0**top),
        (0, peak * 1.1),
        x_ticks=ticks,
        y_ticks=nice_ticks(peak, lambda y: f"{y:g}%"),
        x_title="document length, bins of powers of 2 (K = 1024)",
        log_x=True,
    )
    return svg_chart(
        chart,
        [
            Series(lefts, docs, "documents", PALETTE[0], "bars", middles - lefts),
            Series(middles, toks, "tokens", PALETTE[1], "bars", 2 * lefts - middles),
        ],
    )


#: the fields of a histogram's ``freqlab`` Parquet metadata that are read, and their JSON types
_HEADER_FIELDS: dict[str, tuple[type, ...]] = {
    "corpus": (str,),
    "tokenizer": (str,),
    "meta": (dict,),
    "documents_read": (int, type(None)),
    "skipped": (dict,),
    "empty_documents": (int,),
    "sources": (dict, type(None)),
}


def _check_header(header: dict, path) -> None:
    """Every field of the ``freqlab`` metadata that is read has its JSON type (a hand-edited header: one line)."""

    def check(value, kinds: tuple[type, ...], key: str) -> None:
        if isinstance(value, bool) or not isinstance(value, kinds) or (isinstance(value, int) and value < 0):
            names = " or ".join(
                {"NoneType": "null", "int": "a count", "dict": "a mapping", "str": "a string"}[kind.__name__]
                for kind in kinds
            )
            raise FreqlabError(f"{path}: 'freqlab' metadata field {key} must be {names}, got {brief(value)}")

    def check_skipped(skipped: dict, key: str) -> None:
        for reason, number in skipped.items():
            check(number, (int,), f"{key}.{reason}")

    version = header.get("version", FORMAT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise FreqlabError(
            f"{path}: a length histogram of version {brief(version)}; this freqlab reads version {FORMAT_VERSION} "
            "(a newer freqlab wrote it?)"
        )
    for key, kinds in _HEADER_FIELDS.items():
        if key in header:
            check(header[key], kinds, key)
    check_skipped(header.get("skipped", {}), "skipped")
    for name, extra in (header.get("sources") or {}).items():
        check(extra, (dict,), f"sources.{name}")
        for key in ("skipped", "empty_documents"):
            if key in extra:
                check(extra[key], _HEADER_FIELDS[key], f"sources.{name}.{key}")
        check_skipped(extra.get("skipped", {}), f"sources.{name}.skipped")
