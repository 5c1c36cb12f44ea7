"""Position-id manipulation: PoSE's skip-wise position ids and PI / YaRN stages with scaled rotary angles.

RoPE sees a (query, key) pair only through the difference of their *position ids*; f(i) here counts pairs whose
position-id difference is i. Read by :func:`position_ids_from_spec`; ``.frequency(lengths, counts, L, regime,
seed=0)`` returns an :class:`~freqlab.frequency.exact.ExactFrequency`.

**PoSE** (Zhu et al., "PoSE: Efficient Context Window Extension of LLMs via Positional Skip-wise Training",
ICLR 2024, arXiv:2309.10400; code: github.com/dwzhu-pku/PoSE, ``src/train_pose.py``,
``train_preprocess_function_pose``, as of commit 43b43b3, which tokenizes to 5L tokens; another revision of the file
tokenizes to ``target`` tokens, so draws the end below ``min(n, target)``: the same positions, another replay's
random stream). One training row per document (no packing). A document of n tokens gives a
row of ``Lc = min(n, L)`` tokens in two chunks (the paper's N = 2, the only case the code implements): with
``random.randint`` (both ends inclusive),

    a  = randint(1, (Lc + 1) // 2)       first chunk: the document's first a tokens, position ids 0 .. a − 1
    (randint(Lc, min(n, 5L)) picks where the second chunk's tokens end in the document: no effect on positions)
    u  = randint(0, target − Lc)          second chunk: Lc − a tokens, position ids a + u .. Lc − 1 + u

(the code's first skip ``lt`` is fixed at 0, "this revision makes the coverage possibility more uniform for large
relative positions"; ``target`` is ``scaled_max_position_embeddings = int(L · rope_scaling_factor)``, in float64).
Causal attention over the whole row, so a row trains, with b = Lc − a,

    chunk pairs:  (a − d)⁺ + (b − d)⁺ at difference d;   cross pairs:  #{(x, j) : 1 <= x <= a, 0 <= j < b,
    x + j + u = d} at difference d,

and f reaches ``target − 1``: ``numerator`` has shape (target,). The expectation over a and u is exact: per
distinct ``Lc`` the sums over a and u have closed forms as generating functions with denominator (1 − z)^4
(four cumulative sums of a few impulses), combined over one common denominator lcm(A·(target − Lc + 1)) with
A = (Lc + 1) // 2: O(target + distinct lengths). The numerators outgrow int64 on realistic corpora (E[f] near
10^11 times a denominator near 10^10); they are then kept as Python integers (four cumulative sums over an object
array, about a second per 10^6 positions), still exact. ``replay: true`` gives instead one seeded replay of the
sampler (:meth:`Pose.replay`, Python's ``random.Random(seed)`` drawing a, the end and u per document
in the seeded stream order, as their code does per document): O(documents + target).

**PI / YaRN** (Chen et al., "Extending Context Window of Large Language Models via Positional Interpolation",
arXiv:2306.15595, 2023; Peng et al., "YaRN: Efficient Context Window Extension of Large Language Models",
ICLR 2024, arXiv:2309.00071): a stage with scaled rotary angles trains ordinary position ids, so f is the regime's
f on the *original* position scale (token distances, STRING Eq. 2). Under PI the angle of distance i equals the
pre-extension angle of i / factor; YaRN scales each rotary dimension differently (NTK-by-parts), so no single
factor maps it. The stage records ``method`` and ``factor``; f is not rescaled.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from freqlab.arrays import int64_tokens
from freqlab.errors import FreqlabError
from freqlab.frequency.curricula import Spec
from freqlab.frequency.exact import INT64_LIMIT, ExactFrequency
from freqlab.frequency.kernels import scatter_add
from freqlab.frequency.position import refuse_megatron, segment_frequency
from freqlab.frequency.regimes import (
    REPLAYED_MIX_DOCUMENTS,
    WALKED_MIX_DOCUMENTS,
    check_histogram,
    check_window,
    expands_documents,
    segments,
    stream_order,
)
from freqlab.resources import available_memory, require_memory
from freqlab.sizes import MAX_POSITIONS

#: the largest common denominator of PoSE's exact expectation (its values are Python integers beyond int64)
MAX_DENOMINATOR_BITS = 1 << 20

SCALINGS: tuple[str, ...] = ("pi", "yarn")

Poly = dict[int, int]  # exponent -> coefficient


def _mul(p: Poly, q: Poly) -> Poly:
    out: Poly = defaultdict(int)
    for e1, c1 in p.items():
        for e2, c2 in q.items():
            out[e1 + e2] += c1 * c2
    return out


def _add(p: Poly, q: Poly, scale: int = 1) -> Poly:
    out: Poly = defaultdict(int, p)
    for e, c in q.items():
        out[e] += scale * c
    return out


def _terms(*pairs: tuple[int, int]) -> Poly:
    """Σ coefficient · z^exponent over (exponent, coefficient) pairs (equal exponents add up)."""
    out: Poly = defaultdict(int)
    for e, c in pairs:
        out[e] += c
    return out


def _one_minus(e: int) -> Poly:
    """1 − z^e."""
    return _terms((0, 1), (e, -1))


def pose_numerator(row: int, target: int) -> Poly:
    """Σ over a in 1..A and u in 0..R of a row's pair counts, as a polynomial N(z) with Σ_d f(d) z^d = N(z)/(1−z)^4
    (A = (row + 1) // 2, R = target − row). See the module docstring; the cross pairs give
    z(1 − z^(R+1))·[A(1 + z^row)(1 − z) − (z + z^(row−A))(1 − z^A)], the chunks (R + 1)(1 − z)·[(A·row −
    A(row + 2)z)(1 − z) + (z² + z^(row−A+1))(1 − z^A)].
    """
    A, R = (row + 1) // 2, target - row
    cross = _add(_mul(_terms((0, A), (row, A)), _one_minus(1)), _mul(_terms((1, 1), (row - A, 1)), _one_minus(A)), -1)
    cross = _mul(_mul({1: 1}, _one_minus(R + 1)), cross)
    chunks = _mul(_terms((0, A * row), (1, -A * (row + 2))), _one_minus(1))
    chunks = _add(chunks, _mul(_terms((2, 1), (row - A + 1, 1)), _one_minus(A)))
    return _add(cross, _mul(_terms((0, R + 1), (1, -(R + 1))), chunks))


def _summed(impulses: np.ndarray, order: int) -> np.ndarray:
    out = impulses
    for _ in range(order):
        out = np.cumsum(out)
    return out


@dataclass(frozen=True)
class Pose:
    """PoSE with two chunks, position-id differences up to ``target`` (see the module docstring)."""

    target: int | None = None  # position ids reach target − 1 (None: factor · L)
    factor: Fraction | None = None
    method: str | None = None  # rotary scaling trained alongside (pi, yarn): recorded
    replayed: bool = False

    kind = "pose"
    walks_rows = False

    def mix_documents(self, regime: str) -> int | None:
        """At most how many documents a float64 source mix keeps for its seeded replay (None: not a replay)."""
        return REPLAYED_MIX_DOCUMENTS if self.replayed else None

    # f(W) counts no tokens with W of context: the skipped position ids leave gaps between a query's keys
    contiguous_contexts = False

    def target_for(self, L: int) -> int:
        """The target length PoSE stretches a window ``L`` to."""
        if self.target is not None:
            target = self.target
        elif self.factor is not None:
            # their train_pose.py: int(model_max_position_embeddings * rope_scaling_factor), in float64 (a review:
            # 100 · 1.15 is 114 there, not 115); a factor past 2^30 is refused below, computed exactly
            big = self.factor > MAX_POSITIONS
            target = int(self.factor * L) if big else int(L * float(self.factor))
        else:  # the TypeError `None * L` raised, said plainly
            raise TypeError("Pose needs a target or a factor; both are None")
        if target < L:
            raise FreqlabError(f"pose: target {target} is shorter than the window L = {L}")
        if target > MAX_POSITIONS:
            how = ""
            if self.target is None and self.factor is not None:
                how = f" (factor {_short(self.factor)} · L = {L:,})"
            raise FreqlabError(f"pose: target {_short(target)}{how} is larger than freqlab supports (2^30)")
        return target

    def _rows(self, lengths, counts, L: int):
        L = check_window(L)
        lengths, counts = check_histogram(lengths, counts)
        int64_tokens(lengths, counts)
        return lengths, counts, L, self.target_for(L)

    def frequency(self, lengths, counts, L: int, regime: str = "truncate", seed: int = 0) -> ExactFrequency:
        """E[f](d), 0 <= d < target, over PoSE's skip sampler, exactly (``replay: true``: one seeded replay).

        ``regime`` is not used: PoSE trains one row per document, its first min(n, L) tokens' worth; the rest of
        each document is ``dropped_tokens``.
        """
        refuse_megatron(regime)  # not used, but a stage labelled megatron would say what it is not
        if self.replayed:
            return self.replay(lengths, counts, L, seed)
        lengths, counts, L, target = self._rows(lengths, counts, L)
        groups: dict[int, int] = defaultdict(int)  # row length -> documents
        for n, c in zip(lengths.tolist(), counts.tolist()):
            if c:
                groups[min(n, L)] += c
        # one common denominator, refused before it (and the arrays of values that size) outgrow what can be held:
        # three arrays of `target` Python integers of about its size
        memory = available_memory()
        cap = MAX_DENOMINATOR_BITS if memory is None else min(MAX_DENOMINATOR_BITS, int(8 * memory / (3 * target)))
        denominator = 1
        for r in groups:
            denominator = math.lcm(denominator, ((r + 1) // 2) * (target - r + 1))
            if denominator.bit_length() > cap:
                raise FreqlabError(
                    f"pose: the exact expectation over {len(groups):,} distinct row lengths needs a common denominator "
                    f"of more than {cap:,} bits (values too large to hold {target:,} of them); bin the histogram's "
                    "lengths (fewer distinct rows) or use replay: true (one seeded draw of the authors' sampler)"
                )
        rows_tokens = sum(r * c for r, c in groups.items())
        bits = (16 * denominator * rows_tokens).bit_length()
        # the impulses and their four cumulative sums: int64, or Python integers of ~bits bits each (+ the object)
        require_memory(
            target * (8 if bits < 63 else 48 + bits // 8) * 3,
            f"pose: target {target:,}",
            f"the exact expectation over {len(groups):,} distinct row lengths, {bits} bits per value",
        )
        # |every cumulative sum| <= 2^4 · max f · denominator: int64 when that fits, Python integers otherwise
        wide = 16 * denominator * rows_tokens >= INT64_LIMIT
        impulses = np.zeros(target, dtype=object if wide else np.int64)
        for r, c in groups.items():
            weight = c * (denominator // (((r + 1) // 2) * (target - r + 1)))
            for e, coefficient in pose_numerator(r, target).items():
                if e < target and coefficient:
                    impulses[e] += weight * coefficient
        note = f"PoSE position-id differences up to {target} (expectation over the skip sampler){POSE_ROWS}"
        return ExactFrequency(_summed(impulses, 4), denominator, _untrained(lengths, counts, L), note).reduced()

    def replay(self, lengths, counts, L: int, seed: int = 0) -> ExactFrequency:
        """f of one draw of PoSE's sampler: documents in the seeded stream order, ``random.Random(seed)`` drawing
        ``a``, the second chunk's end and the skip ``u`` per document as ``train_preprocess_function_pose`` does.
        """
        lengths, counts, L, target = self._rows(lengths, counts, L)
        rng = random.Random(seed)
        docs = stream_order(lengths, counts, seed, "PoSE's replay").tolist()
        a = np.empty(len(docs), dtype=np.int64)
        u = np.empty(len(docs), dtype=np.int64)
        rows = np.minimum(np.array(docs, dtype=np.int64), L)
        for k, n in enumerate(docs):
            row = min(n, L)
            a[k] = rng.randint(1, (row + 1) // 2)
            rng.randint(row, min(n, 5 * L))  # where the second chunk ends in the document
            u[k] = rng.randint(0, target - row)
        b = rows - a
        one = np.ones_like(a)
        # Σ_d f(d) z^d = [chunk a + chunk b + cross] / (1 − z)^2 per row, as impulses (see the module docstring)
        index = np.concatenate([np.zeros_like(a), one, a + 1, b + 1, 1 + u, 1 + u + a, 1 + u + b, 1 + u + rows])
        values = np.concatenate([a + b, -(a + b + 2), one, one, one, -one, -one, one])
        keep = index < target
        impulses = scatter_add(target, index[keep], values[keep])
        note = f"PoSE position-id differences up to {target} (one seeded replay, seed {seed}){POSE_ROWS}"
        return ExactFrequency(_summed(impulses, 2), 1, _untrained(lengths, counts, L), note)


POSE_ROWS = "; one row per document, its first min(n, L) tokens: the stage's regime is not used"
#: what a scaled (PI / YaRN) stage's f is, said beside it (a review: its f equal to the unscaled stage's, unsaid)
SCALED_DISTANCES = "; f counts token distances as unscaled: the scaling changes their angles, not their count"


def _untrained(lengths: np.ndarray, counts: np.ndarray, L: int) -> Fraction:
    """Tokens no PoSE row trains: each document's beyond its row of min(n, L)."""
    return Fraction(sum(c * (n - L) for n, c in zip(lengths.tolist(), counts.tolist()) if n > L))


@dataclass(frozen=True)
class Scaled:
    """A fine-tuning stage with rotary angles scaled by ``factor`` (PI or YaRN): f on the original scale."""

    method: str
    factor: Fraction

    kind = "scaled"
    walks_rows = False

    def mix_documents(self, regime: str) -> int | None:
        """At most how many documents a float64 source mix keeps: as for ``regime`` alone."""
        return WALKED_MIX_DOCUMENTS if expands_documents(regime) else None

    contiguous_contexts = True  # a query sees its keys at every distance up to its context (token distances)

    def frequency(self, lengths, counts, L: int, regime: str = "natural", seed: int = 0) -> ExactFrequency:
        """The regime's exact f over position-id differences (token distances, not divided by ``factor``)."""
        refuse_megatron(regime)  # its note could not say the rows are concat's
        f = segment_frequency(segments(lengths, counts, L, regime, seed=seed))
        note = f"{self.method.upper()} x{self.factor}: f over token distances on the original position scale"
        return ExactFrequency(f, note=note)


PositionIds = Pose | Scaled


def _short(x: int | Fraction) -> str:
    """A number given by the user, exact when short, else in 4 significant digits (a factor of 1e400 gives a
    400-digit target: one line stays one line).
    """
    text = str(x)
    return text if len(text) <= 20 else f"{(Decimal(x.numerator) / Decimal(x.denominator)).normalize():.4g}"


def _factor(spec: Spec) -> Fraction:
    value = spec.data.get("factor")
    try:
        factor = Fraction(str(value)) if not isinstance(value, bool) else None
    except (ValueError, ZeroDivisionError):
        factor = None
    if factor is None or factor < 1:
        raise spec.bad("factor", "a scaling factor >= 1, e.g. 4")
    return factor


def position_ids_from_spec(spec: dict) -> PositionIds:
    """Position-id manipulation from its mapping; FreqlabError naming a bad key or value.

    A document of 4 tokens in windows of 4 trained toward 6 positions: the first chunk has a = 1 or 2 tokens and
    the skip u is 0, 1 or 2, six equally likely rows; the last id is u + 3, so the difference 5 is trained in the two
    rows with u = 2 (a = 1 or 2), 1/3 in expectation:

    >>> p = position_ids_from_spec({"kind": "pose", "target": 6, "chunks": 2})
    >>> e = p.frequency([4], [1], 4)
    >>> [str(e.value(d)) for d in range(6)]
    ['4', '7/3', '4/3', '7/6', '5/6', '1/3']
    """
    if not isinstance(spec, dict):
        raise FreqlabError(f"position ids must be a mapping with a kind, got {spec!r}")
    kind = spec.get("kind")
    if kind == "pose":
        fields = Spec(spec, "pose", ("target", "factor", "chunks", "method", "replay"))
        if fields.has("target") == fields.has("factor"):
            raise FreqlabError("pose: give exactly one of target (e.g. 128K) or factor (target = factor · L)")
        if fields.integer("chunks", 2) != 2:
            raise fields.bad("chunks", "2 (the only number of chunks PoSE's public code trains)")
        # None (no scaling) is an option the str annotation leaves out; the message leaves it out too
        method = fields.choice("method", (*SCALINGS, None), None)  # type: ignore[arg-type]
        target = fields.positions("target") if fields.has("target") else None
        factor = _factor(fields) if fields.has("factor") else None
        return Pose(target, factor, method, bool(fields.flag("replay", False)))
    if kind == "scaled":
        fields = Spec(spec, "scaled", ("method", "factor"))
        return Scaled(fields.choice("method", SCALINGS), _factor(fields))
    raise FreqlabError(f"position ids kind must be pose or scaled, got {kind!r}")


__all__ = ["Pose", "PositionIds", "Scaled", "pose_numerator", "position_ids_from_spec"]
