"""STRING: shift well-trained relative positions over the under-trained ones (Sec. 4 of An et al., "Why Does the
Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745).

The relative position matrix of a causal window of L tokens is P[m][n] = r = m - n for n <= m. STRING
drops the positions r >= N (the infrequent tail) and shifts the rest by S = L - N towards the bottom-left
corner, adding a small local window W so the W nearest neighbours stay closest (Eq. 4)::

    P'[m][n] = r - S + W   if r >= S
             = r           otherwise

(The paper writes the condition as "m >= n - S"; its Fig. 5 and App. A.1 examples fix it as r = m - n >= S.)
Positions used after STRING are 0..S-1 (unshifted, near the diagonal) and W..L-1-S+W (shifted); the
largest is max(S - 1, L - 1 - S + W), i.e. N - 1 + W for S <= L/2: apart from W positions just past N,
every position used lies in the frequently trained range 0..N-1.

Recommendation. The paper (Sec. 4.1): "We suggest setting the local window W >= 32 and the offset
L/3 <= S <= L/2. We set S = L/3 and W = 128 for all models across downstream tasks." Its ablation (Fig. 7)
tried S from L/5 to L/2: performance grew with S, and the trend slowed once S exceeded L/3. The official
repository's README, a different source, suggests shifted_offset 0.25-0.4 L (example int(0.33 * L)).
freqlab follows the paper: from the well-trained range N* (see :mod:`freqlab.plan.well_trained`: the
effective length freqlab predicts from a histogram, regime, budget and tau) it takes the smallest S that keeps
every position STRING uses, up to L - S + W - 1 (for S <= (L + W) / 2; S - 1 above), within 0..N*-1:
S = L - N* + W, rounded up, which does so when it is at most N* (L + W <= 2 N*: below that no shift
can, and freqlab takes the paper's upper end L/2, the fewest positions of its range, saying so); it keeps S in the
paper's range [L/3, L/2], reporting both values when they differ; without frequency information S = L/3 rounded
*up* to a multiple of 64, so the default never falls below L/3. A given S (e.g. the README's int(0.33 L)) is
evaluated instead. Beyond L, :func:`string_yarn` combines STRING with YaRN by the STRING repository's own rule (its
Qwen2 RULER script).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Unpack, cast

import numpy as np

from freqlab.display import Display, Displayed
from freqlab.errors import FreqlabError, ParameterError
from freqlab.frequency import share_at_least
from freqlab.frequency.stats import positive_number
from freqlab.plan import display as shown
from freqlab.plan.rope_scaling import RopeScalingPlan, plan_rope_scaling
from freqlab.plan.well_trained import (
    FrequencyInputs,
    WellTrained,
    WellTrainedBasis,
    check_window,
    well_trained_range,
)

DEFAULT_W: int = 128
MIN_W: int = 32
DEFAULT_ROUND: int = 64
PAPER_RANGE: tuple[Fraction, Fraction] = (Fraction(1, 3), Fraction(1, 2))  # Sec. 4.1: L/3 <= S <= L/2
OFFICIAL_README_RANGE: tuple[Fraction, Fraction] = (Fraction(1, 4), Fraction(2, 5))  # HKUNLP/STRING: 0.25-0.4 L
DEFAULT_S_FRACTION: Fraction = Fraction(1, 3)  # Sec. 4.1: "We set S = L/3"
MATRIX_LIMIT: int = 8192  # beyond this L, use the row / histogram functions instead of an L x L matrix
MASKED: int = -1  # value of the (unused) upper triangle n > m in string_position_matrix


def check_local_window(W: int) -> int:
    """A plan's local window W: at least :data:`MIN_W`, where STRING's ablation (Sec. 4.3, Fig. 7) finds it improves on
    RoPE ("when W >= 32, the model achieves a significant improvement"); a ParameterError naming ``--W`` otherwise.
    """
    W = check_window(W, "W")
    if W < MIN_W:
        raise ParameterError(
            f"W = {W} is below {MIN_W}: in STRING's ablation (Fig. 7) the window improves on RoPE from W = {MIN_W} on; "
            "freqlab.apply.string takes any W < S to try others",
            "--W",
        )
    return W


def _check_shift(L: int, S: int, W: int) -> tuple[int, int, int]:
    L = check_window(L)
    if isinstance(S, bool) or not isinstance(S, (int, np.integer)) or not 0 < int(S) < L:
        raise ParameterError(f"the shift S must be an integer with 0 < S < L = {L}, got {S!r}", "--S")
    if isinstance(W, bool) or not isinstance(W, (int, np.integer)) or int(W) < 0:
        raise ParameterError(f"the local window W must be a non-negative integer, got {W!r}", "--W")
    if int(W) >= int(S):
        raise ParameterError(
            f"the local window W = {W} must be smaller than the shift S = {S} (STRING needs W << S)", "--W"
        )
    return L, int(S), int(W)


def string_position_row(L: int, S: int, W: int, m: int | None = None) -> np.ndarray:
    """Row m of the STRING position matrix: P'[m][n] for n = 0..m (Eq. 4), int64, length m + 1.

    Default m = L - 1 (the last row). O(m) memory; no L x L matrix.

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    S : int
        STRING's shift, 0 < S < L.
    W : int
        STRING's local window, 0 <= W < S.
    m : int, optional
        The row (query position), 0 <= m < L; default L - 1.

    Returns
    -------
    numpy.ndarray
        int64, length m + 1: P'[m][n] for n = 0..m.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.

    Examples
    --------
    >>> string_position_row(9, 3, 0).tolist()  # Fig. 5c with W = 0
    [5, 4, 3, 2, 1, 0, 2, 1, 0]
    >>> row = string_position_row(131072, 43008, 128)  # App. A.1: Llama 3.1, S = 42K, W = 128
    >>> int(row[0]), row[-43009:-43007].tolist()
    (88191, [128, 43007])
    """
    L, S, W = _check_shift(L, S, W)
    m = L - 1 if m is None else int(m)
    if not 0 <= m < L:
        raise FreqlabError(f"row m must be in 0..{L - 1}, got {m}")
    r = m - np.arange(m + 1, dtype=np.int64)
    return np.where(r >= S, r - S + W, r)


def string_position_matrix(L: int, S: int, W: int) -> np.ndarray:
    """The full L x L STRING position matrix (Eq. 4) as int64; the upper triangle n > m is MASKED (-1).

    Only for small L (<= 8192); for large windows use :func:`string_position_row` or
    :func:`string_position_histogram`.

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    S : int
        STRING's shift, 0 < S < L.
    W : int
        STRING's local window, 0 <= W < S.

    Returns
    -------
    numpy.ndarray
        int64 of shape (L, L); -1 above the diagonal.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.

    Examples
    --------
    >>> string_position_matrix(4, 2, 1).tolist()
    [[0, -1, -1, -1], [1, 0, -1, -1], [1, 1, 0, -1], [2, 1, 1, 0]]
    """
    L, S, W = _check_shift(L, S, W)
    if L > MATRIX_LIMIT:
        raise FreqlabError(
            f"L = {L} is too large for a full L x L matrix (limit {MATRIX_LIMIT}); "
            "use string_position_row or string_position_histogram"
        )
    idx = np.arange(L, dtype=np.int64)
    r = idx[:, None] - idx[None, :]
    out = np.where(r >= S, r - S + W, r)
    out[r < 0] = MASKED
    return out


def string_positions_used(L: int, S: int, W: int) -> int:
    """Number of distinct position values STRING can use: max(S, L - S + W) (positions 0..that - 1).

    >>> string_positions_used(131072, 43008, 128)
    88192
    """
    L, S, W = _check_shift(L, S, W)
    return max(S, L - S + W)


def string_remap_counts(pair_counts, S: int, W: int) -> np.ndarray:
    """Move query-key pair counts from original distances r to their STRING positions, in O(L).

    ``pair_counts[r]`` is the number of pairs at distance r (0 <= r < L). Returns counts per STRING
    position p = 0..max(S - 1, L - 1 - S + W): p < S receives the pairs at r = p, and p >= W also those at
    r = p + S - W >= S. Integer in, integer out (int64).

    >>> string_remap_counts([9, 8, 7, 6, 5, 4, 3, 2, 1], 3, 0).tolist()  # Fig. 5: one row per query
    [15, 13, 11, 3, 2, 1]
    """
    counts = np.asarray(pair_counts)
    L = counts.size
    _, S, W = _check_shift(L, S, W)
    out = np.zeros(string_positions_used(L, S, W), dtype=np.result_type(counts.dtype, np.int64))
    out[:S] += counts[:S]  # unshifted: r < S keeps p = r
    out[W : W + L - S] += counts[S:]  # shifted: r >= S lands on p = r - S + W
    return out


def _pairs_per_distance(L: int, length: int | None) -> np.ndarray:
    """Query-key pairs at distance r = 0..L-1 in one causal sequence of ``length`` tokens: max(length - r, 0)."""
    n = L if length is None else check_window(length, "sequence length")
    if not 1 <= n <= L:
        raise FreqlabError(f"sequence length must be in 1..{L}, got {length}")
    return np.maximum(n - np.arange(L, dtype=np.int64), 0)


def string_position_histogram(L: int, S: int, W: int, length: int | None = None) -> np.ndarray:
    """How many query-key pairs use each position p after STRING in one causal sequence (closed form, O(L)).

    Without STRING a sequence of ``length`` tokens (default L) has ``length - r`` pairs at distance r.
    Returns int64 counts for p = 0..max(S-1, L-1-S+W); equal to a bincount of :func:`string_position_matrix`.

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    S : int
        STRING's shift, 0 < S < L.
    W : int
        STRING's local window, 0 <= W < S.
    length : int, optional
        Sequence length, 1 <= length <= L; default L.

    Returns
    -------
    numpy.ndarray
        int64 counts of query-key pairs per position p = 0..max(S - 1, L - 1 - S + W).

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.

    Examples
    --------
    >>> string_position_histogram(9, 3, 0).tolist()
    [15, 13, 11, 3, 2, 1]
    """
    L, S, W = _check_shift(L, S, W)
    return string_remap_counts(_pairs_per_distance(L, length), S, W)


@dataclass(frozen=True, repr=False)
class StringUsage(Displayed):
    """Per position p after STRING: pairs using it before/after, and how often training saw it (f(p)).

    Arrays share the index p = 0..L-1 (after STRING only p < max(S, L-S+W) are used; the rest are zero).
    ``trained`` is None when no frequency was given.

    Attributes
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    S : int
        STRING's shift, 0 < S < L.
    W : int
        STRING's local window, 0 <= W < S.
    pairs_before, pairs_after : numpy.ndarray
        int64 query-key pairs per position p of one sequence of L tokens, with RoPE and with STRING.
    trained : numpy.ndarray or None
        f(p), how often training saw position p (None when no frequency was given).

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """

    L: int
    S: int
    W: int
    pairs_before: np.ndarray
    pairs_after: np.ndarray
    trained: np.ndarray | None

    @property
    def positions(self) -> np.ndarray:
        """p = 0..L-1, the index of the other arrays."""
        return np.arange(self.L, dtype=np.int64)

    def to_dict(self) -> dict:
        """The usage as JSON-ready data."""
        return {
            "L": self.L,
            "S": self.S,
            "W": self.W,
            "position": self.positions.tolist(),
            "pairs_before": self.pairs_before.tolist(),
            "pairs_after": self.pairs_after.tolist(),
            "trained": None if self.trained is None else self.trained.tolist(),
        }

    def report(self) -> str:
        """The positions RoPE and STRING use, the pairs, and (with a frequency) the mean trained f over the pairs."""
        rows = shown.usage_rows(self)
        return "\n".join([f"STRING usage: {shown.usage_headline(self)}", *(f"  {k}: {v}" for k, v in rows)])

    def write_parquet(self, path: str | Path) -> None:
        """Write the usage table (:data:`freqlab.formats.USAGE`: position, pairs_before, pairs_after and, with a
        frequency, trained; a header with L, S and W) to a Parquet file (atomically; ``~`` is the home folder), as
        ``freqlab plan string --usage-out`` does.
        """
        import polars as pl

        from freqlab.files import write_parquet
        from freqlab.formats import USAGE_FORMAT, USAGE_VERSION
        from freqlab.paths import expand_home

        columns = {"position": self.positions, "pairs_before": self.pairs_before, "pairs_after": self.pairs_after}
        if self.trained is not None:
            columns["trained"] = self.trained
        header = {"format": USAGE_FORMAT, "version": USAGE_VERSION, "L": self.L, "S": self.S, "W": self.W}
        write_parquet(expand_home(path), pl.DataFrame(columns), header)

    def _display(self) -> Display:
        return shown.usage_display(self)


def is_usage_table(path: str | Path) -> bool:
    """Whether ``path`` is a usage table freqlab wrote (:meth:`StringUsage.write_parquet`): with its header, or, from
    before the header, a Parquet file without one whose columns are exactly the table's (``--usage-out`` replaces
    only such a file).
    """
    from freqlab.files import has_freqlab_header, not_parquet
    from freqlab.formats import USAGE, USAGE_FORMAT

    if has_freqlab_header(path, USAGE_FORMAT):
        return True
    if has_freqlab_header(path) or not_parquet(path):
        return False
    import polars as pl

    try:
        columns = list(pl.read_parquet_schema(path))
    except Exception:  # any unreadable file is not a table of ours
        return False
    return columns[:3] == list(USAGE.columns) and columns[3:] in ([], list(USAGE.optional))


def string_usage(L: int, S: int, W: int, *, frequency=None, length: int | None = None) -> StringUsage:
    """Data for a figure: which positions a length-``length`` sequence uses with and without STRING, and
    how often each was trained (``frequency`` f, length L).

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    S : int
        STRING's shift, 0 < S < L.
    W : int
        STRING's local window, 0 <= W < S.
    frequency : array_like, optional
        Position frequency f of length L (how often each position was trained).
    length : int, optional
        Sequence length; default L.

    Returns
    -------
    StringUsage
        Pairs per position before and after STRING, and f.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.

    Examples
    --------
    >>> u = string_usage(9, 3, 0)
    >>> u.pairs_before.tolist(), u.pairs_after.tolist()
    ([9, 8, 7, 6, 5, 4, 3, 2, 1], [15, 13, 11, 3, 2, 1, 0, 0, 0])
    """
    L, S, W = _check_shift(L, S, W)
    before = _pairs_per_distance(L, length)
    after = string_remap_counts(before, S, W)
    padded = np.zeros(L, dtype=np.int64)
    padded[: after.size] = after
    trained = None
    if frequency is not None:
        trained = np.asarray(frequency)
        if trained.shape != (L,):
            raise FreqlabError(f"the frequency must have shape ({L},), got {trained.shape}")
    return StringUsage(L, S, W, before, padded, trained)


# --- planner ---------------------------------------------------------------------------------------------

#: HKUNLP/STRING ruler/test_ruler_qwen2.py (and string_for_qwen2.py), the repository's own STRING + YaRN combination
STRING_YARN_SOURCE = "HKUNLP/STRING ruler/test_ruler_qwen2.py"
#: string_for_qwen2.py scales cos and sin by 0.1·ln(2) + 1 whatever the YaRN factor ("to recover" the attention map)
STRING_YARN_ATTENTION = 0.1 * math.log(2) + 1


@dataclass(frozen=True, repr=False)
class StringYarn:
    """STRING beyond L combined with YaRN, by the rule of the STRING repository's Qwen2 RULER script
    (:data:`STRING_YARN_SOURCE`, theirs, not the paper's): for a test length N and shift ratio r = S/L,
    ``shifted_offset = int(r·N)`` and ``yarn_factor = (N / L)·(1 - r)``, with the attention scaled by
    0.1·ln(2) + 1. ``yarn`` is None when the factor is <= 1 (STRING alone keeps the positions below L).
    """

    N: int
    S: int
    W: int
    factor: float
    largest_position: int  # N - S + W - 1 before YaRN: the largest position STRING uses at N tokens
    yarn: RopeScalingPlan | None

    @property
    def hf_patch(self) -> str:
        """The call of ``string_for_qwen2.replace_with_string`` their script makes (``yarn_factor`` is required
        there: without it the patch's rotary embedding multiplies None); a factor <= 1 is given as 1.0, which
        their YaRN turns into the stock frequencies (no scaling, as this plan says).
        """
        factor = self.factor if self.yarn is not None else 1.0
        return (
            f"replace_with_string(max_test_length={self.N}, shifted_offset={self.S}, small_local_value={self.W}, "
            f"yarn_factor={factor!r})"
        )

    @property
    def freqlab_lines(self) -> tuple[str, str] | None:
        """freqlab's own apply and probe lines for a model loaded with one of the YaRN blocks (None without YaRN):
        :func:`freqlab.apply.string` checks S against the window the block scales to.
        """
        return None if self.yarn is None else freqlab_lines(self.S, self.W, self.N)

    def to_dict(self) -> dict:
        """The extension as JSON-ready data."""
        lines = self.freqlab_lines or (None, None)
        return {
            "N": self.N, "S": self.S, "W": self.W, "yarn_factor": self.factor,
            "largest_position": self.largest_position, "hf_patch": self.hf_patch, "rule": STRING_YARN_SOURCE,
            "yarn": None if self.yarn is None else self.yarn.to_dict(),
            "freqlab_apply": lines[0], "freqlab_probe": lines[1],
        }  # fmt: skip


@dataclass(frozen=True, repr=False)
class StringPlan(WellTrainedBasis, Displayed):
    """A STRING recommendation (or the evaluation of a given S): S, W, the reasoning and paste-ready blocks.

    Two shares of f are reported, each with its definition: ``overwritten_share`` at positions i >= L - S (the
    distances STRING drops and overwrites) and ``unused_share`` at i >= max(S, L - S + W) (the positions no query-key
    pair uses after STRING, shaded by ``plot string-usage``; L - S + W unless S > (L + W) / 2, where the distances
    below S, not shifted, use positions up to S - 1).
    """

    L: int
    S: int
    W: int
    well_trained: WellTrained
    S_rule: int | None  # what the frequency rule alone gives (rounded); None without frequency information
    S_range: tuple[int, int]  # the paper's range [L/3, L/2] after rounding inwards
    within_range: bool  # whether the rule's S (S_rule; the given S without frequencies) lies in S_range
    overwritten_share: float  # share of position mass at positions >= L - S
    share_basis: str
    test_length: int
    reasoning: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    unused_share: float = 0.0  # share of position mass at positions >= max(S, L - S + W)
    S_given: bool = False
    extension: StringYarn | None = None

    @property
    def ratio(self) -> float:
        """S / L."""
        return self.S / self.L

    @property
    def largest_position(self) -> int:
        """The largest position STRING uses in a window of L tokens: max(S, L - S + W) - 1."""
        return string_positions_used(self.L, self.S, self.W) - 1

    @property
    def within_well_trained(self) -> bool:
        """Every position STRING uses (0..largest_position) lies in the well-trained range 0..N*-1."""
        return self.largest_position < self.N_star

    @property
    def hf_patch(self) -> str:
        """Call of the official Hugging Face patch (HKUNLP/STRING)."""
        return (
            f"replace_with_string(max_test_length={self.test_length}, shifted_offset={self.S}, "
            f"small_local_value={self.W})"
        )

    @property
    def freqlab_apply(self) -> str:
        """The plan on a loaded Hugging Face model, in Python (:func:`freqlab.apply.string`)."""
        return freqlab_lines(self.S, self.W)[0]

    @property
    def freqlab_probe(self) -> str:
        """The effective length measured with and without the plan (``freqlab probe``), up to the test length."""
        return freqlab_lines(self.S, self.W, self.test_length if self.test_length != self.L else None)[1]

    @property
    def vllm_config(self) -> dict:
        """The official vLLM config block."""
        return {"string_config": {"shifted_offset": self.S, "local_value": self.W}}

    @property
    def vllm_block(self) -> str:
        """The vLLM block as it is pasted into a JSON config: ``"string_config": {...}``."""
        return json.dumps(self.vllm_config)[1:-1]

    def to_dict(self) -> dict:
        """The plan as JSON-ready data."""
        return self._plan_dict(
            "string", skip=("extension",), S_over_L=self.ratio, largest_position=self.largest_position,
            within_well_trained=self.within_well_trained, hf_patch=self.hf_patch, vllm_config=self.vllm_config,
            freqlab_apply=self.freqlab_apply, freqlab_probe=self.freqlab_probe,
            extension=None if self.extension is None else self.extension.to_dict(),
        )  # fmt: skip

    def report(self) -> str:
        """The terminal report of ``freqlab plan string``: S, W and N*, the positions STRING overwrites and never
        uses, the reasoning, and the paste-ready blocks (with ``extend_to``: STRING + YaRN beyond L).
        """
        verb = "evaluated" if self.S_given else "recommended"
        # a review: "N* = 2730 (rule: default)" printed above an S whose positions pass 2730 read as a broken rule
        known = f"N* = {self.N_star} (rule: {self.rule})"
        if self.rule == "default":
            known = f"N* unknown without frequency information ({self.N_star} = 2L/3 assumed; S is not chosen by it)"
        lines = [
            f"STRING for L = {self.L}: S = {self.S} (S/L = {self.ratio:.3f}, {verb}), W = {self.W}",
            f"  well-trained range {known}",
        ]
        if self.S_rule is not None and (self.S_given or not self.within_range):
            lines.append(
                f"  frequency rule alone: S = {self.S_rule}; paper's range [L/3, L/2] (Sec. 4.1) = {list(self.S_range)}"
            )
        within = "within" if self.within_well_trained else "beyond"
        L, S = self.L, self.S
        trained = f"{within} N* - 1 = {self.N_star - 1}" if self.N_star else "no position is well trained: N* = 0"
        if self.rule == "default":  # N* is the 2L/3 assumed, not a measure: no verdict against it
            trained = "no frequency information to check it against"
        lines += [
            f"  largest position used max(S, L - S + W) - 1 = {self.largest_position} ({trained})",
            f"  overwritten positions i >= L - S = {L - S}: {self.overwritten_share:.2%} of position mass"
            + (f" ({L - S}..{S - 1} still used by the distances below S)" if S > L - S else ""),
            f"  never-used positions i >= max(S, L - S + W) = {self.largest_position + 1}: {self.unused_share:.2%} "
            "of position mass "
            "(as `plot string-usage` shades)",
            "",
            self.reasoning,
            *(f"note: {note}" for note in self.notes),
            *shown.block("Hugging Face (official STRING patch):", [self.hf_patch]),
            *shown.block("vLLM config:", [self.vllm_block]),
            *shown.block(shown.FREQLAB_BLOCK, [self.freqlab_apply, self.freqlab_probe]),
        ]
        e = self.extension
        if e is not None:
            lines += shown.block(f"Beyond L: STRING at N = {e.N} (rule of {STRING_YARN_SOURCE}):", [e.hf_patch])
            if e.yarn is not None:
                for b in e.yarn.blocks:
                    lines += shown.block(f"YaRN, factor {e.factor:.6g}, {b.label}:", [json.dumps(b.config)])
                lines += [f"note: {note}" for note in e.yarn.notes]
                lines += shown.block("freqlab, on the model saved with one of these YaRN blocks:", e.freqlab_lines)
        return "\n".join(lines)

    def _display(self) -> Display:
        return shown.string_display(self)


def _round_to(x: Fraction | int, q: int) -> int:
    """Nearest multiple of q (halves up)."""
    return int((Fraction(x) / q + Fraction(1, 2)) // 1) * q


def _round_up(x: Fraction | int, q: int) -> int:
    """Smallest multiple of q that is >= x."""
    return int(-(-Fraction(x) // q)) * q


def recommended_range(L: int, round_to: int = DEFAULT_ROUND) -> tuple[int, int, int]:
    """(lo, hi, q): multiples of q inside the paper's range [L/3, L/2] (Sec. 4.1); q falls back to 1 when no
    multiple fits. lo is L/3 rounded up, the default S.

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    round_to : int
        Multiple q that S is rounded to (falls back to 1).

    Returns
    -------
    tuple of int
        (lo, hi, q): lo = L/3 rounded up to q (the default S), hi = L/2 rounded down.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.

    Examples
    --------
    >>> recommended_range(131072), recommended_range(4096), recommended_range(100)
    ((43712, 65536, 64), (1408, 2048, 64), (34, 50, 1))
    """
    lo_f, hi_f = (L * PAPER_RANGE[0], L * PAPER_RANGE[1])
    q = check_window(round_to, "round_to")
    lo, hi = -(-lo_f // q) * q, (hi_f // q) * q
    if lo > hi:
        q = 1
        lo, hi = -(-lo_f // 1), hi_f // 1
    return int(lo), int(hi), q


validated_range = recommended_range  # former name, kept for existing callers


def string_yarn(
    L: int, S: int, W: int, N: int, *, ratio: float | Fraction | None = None, rope_theta: float | None = None
) -> StringYarn:
    """STRING at test length N > L combined with YaRN, by the STRING repository's own rule (its Qwen2 RULER
    script, :data:`STRING_YARN_SOURCE`): r = S/L, shifted_offset = int(r·N), yarn_factor = (N/L)·(1 - r), attention
    factor 0.1·ln(2) + 1 (string_for_qwen2.py). The largest position STRING then uses, max(S_N, N - S_N + W) - 1
    (N - S_N + W - 1 for r <= 1/2), divided by the factor is about L; above r = 1/2 the distances below S_N keep
    their positions, up to S_N - 1, and the plan says where they pass L.

    ``ratio`` is their ``shifted_ratio`` (default S/L); ``rope_theta`` the model's RoPE base for the YaRN blocks (not
    given: 10000, and the blocks' notes say so).

    >>> e = string_yarn(32768, 10813, 128, 131072, ratio=0.33)  # Qwen2 32K -> 128K with their default ratio
    >>> e.S, round(e.factor, 6)
    (43253, 2.68)
    """
    L, S, W = _check_shift(L, S, W)
    N = check_window(N, "test length N")
    if N <= L:
        raise FreqlabError(f"extend_to N = {N} is not above L = {L}")
    if ratio is not None:
        positive_number(ratio, "the shift ratio")
    r = Fraction(S, L) if ratio is None else Fraction(float(ratio) if isinstance(ratio, np.floating) else ratio)
    if not 0 < r < 1:
        raise FreqlabError(f"the shift ratio must be in (0, 1), got {ratio}")
    S_N = int(float(r) * N)  # their int(shifted_ratio * N), in float64 as their script computes it
    factor = float(Fraction(N, L) * (1 - r))
    largest = string_positions_used(N, S_N, W) - 1  # max(S_N, N - S_N + W) - 1: distances below S_N keep theirs
    yarn = None
    if factor > 1:
        yarn = plan_rope_scaling(L, N, "yarn", factor=factor, rope_theta=rope_theta,
                                 attention_factor=STRING_YARN_ATTENTION, positions_used=largest + 1)  # fmt: skip
    return StringYarn(N, S_N, W, factor, largest, yarn)


def plan_string(
    L: int,
    *,
    W: int = DEFAULT_W,
    S: int | None = None,
    round_to: int = DEFAULT_ROUND,
    test_length: int | None = None,
    extend_to: int | None = None,
    rope_theta: float | None = None,
    **frequency: Unpack[FrequencyInputs],
) -> StringPlan:
    """Recommend STRING's shift S and local window W for a model trained with window L, or evaluate a given S.

    Parameters
    ----------
    L : int
        Training window.
    W : int
        Local window (the paper's default 128).
    S : int, optional
        A shift to evaluate instead of recommending one.
    round_to : int
        S is rounded up to a multiple of this.
    test_length : int, optional
        Length the HF patch is written for (default L).
    extend_to : int, optional
        N > L adds STRING + YaRN by the STRING repository's rule (:func:`string_yarn`).
    rope_theta : float, optional
        The model's RoPE base, for ``extend_to``'s YaRN blocks (not given: 10000, with a note; the rule's Qwen2 has
        1000000).
    **frequency
        ``histogram`` + ``regime``, a precomputed ``frequency`` array, or a ``schedule``; ``tokens``, ``tau``,
        ``mass``: passed to :func:`well_trained_range`, which derives N* (budget rule when ``tokens`` is given,
        else mass rule).

    Returns
    -------
    StringPlan
        ``S``, ``W``, the ``rule`` that chose S, N* (``well_trained``), the shares of f STRING drops and the
        ``hf_patch`` call.

    Notes
    -----
    STRING (Sec. 4 [1]_) maps a relative distance r >= S to r − S + W (Eq. 4), so it uses positions
    0..max(S, L − S + W) − 1 (L − S + W − 1 for S <= (L + W)/2: the distances below S are not moved). The
    frequency rule keeps them within the well-trained 0..N* − 1:
    S_rule = L − N* + W rounded *up* to a multiple of ``round_to``, kept in the paper's range [L/3, L/2]
    (Sec. 4.1); where the multiple passes N*, S_rule is L − N* + W itself; when L − N* + W > N* (L + W > 2 N*) no
    shift keeps them there: S_rule is None and S = L/2 (rounded down), the fewest positions of the paper's range.
    Without frequency information S = L/3 (the paper's setting), rounded up.

    References
    ----------
    .. [1] C. An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025,
           arXiv:2410.18745.

    Examples
    --------
    >>> p = plan_string(131072)
    >>> p.S, p.W, p.rule, p.hf_patch
    (43712, 128, 'default', 'replace_with_string(max_test_length=131072, shifted_offset=43712, small_local_value=128)')
    >>> plan_string(4096, S=int(0.33 * 4096)).S  # the official README's int(0.33 L), evaluated
    1351
    """
    L = check_window(L)
    given = S is not None
    wt = well_trained_range(L, default_fraction=1 - DEFAULT_S_FRACTION, **frequency)
    lo, hi, q = recommended_range(L, round_to)
    notes: list[str] = []
    if q != round_to and S is None:
        notes.append(f"L = {L} is too small to round S to a multiple of {round_to}; S is only made a whole number")
    W = check_local_window(W)
    # every S in [L - N* + W, N*] keeps the positions used, up to max(S, L - S + W) - 1, below N*: the rule takes the
    # smallest multiple of q there, else its lower end; the range is empty when L + W > 2 N*: no shift can
    S_rule, unreachable = None, False
    if wt.rule != "default":
        lowest = L - wt.N + W
        unreachable = lowest > wt.N or lowest >= L
        rounded = _round_up(lowest, q)
        S_rule = None if unreachable else (rounded if rounded <= wt.N and rounded < L else lowest)
    if S is not None:
        _check_shift(L, S, 0)
        S = int(S)
        within = L <= 3 * S and 2 * S <= L  # the paper's range itself, not its multiples of q
        if not within:
            notes.append(
                f"S = {S} (S/L = {S / L:.3f}) is outside the paper's range L/3..L/2 = {_paper_range(L)} (Sec. 4.1)"
            )
    elif unreachable:  # the paper's upper end uses the fewest positions its range can: L - S + W - 1 falls with S
        S, within = hi, False
    elif S_rule is None:
        S = lo  # L/3 rounded up: the nearest multiple of q inside [L/3, L/2]
        within = True
    else:
        S = min(max(S_rule, lo), hi)
        within = lo <= S_rule <= hi
    if W >= S:
        # a larger S only where one below L can pass W (a review: --L 96 --S 48 was told "or a larger S"), and
        # S > 32 only where one is below L (a second: --L 33 --S 20)
        larger = "a larger S" if given and W < L - 1 else "a longer window" if not given else ""
        if S > MIN_W:
            remedy = f"use a smaller W (>= {MIN_W})" + (f" or {larger}" if larger else "")
        elif given and L - 1 > MIN_W:
            remedy = f"no W fits ({MIN_W} <= W < S): give S > {MIN_W} (and W < S)"
        elif given:  # no S in MIN_W + 1 .. L - 1
            remedy = f"no W fits ({MIN_W} <= W < S < L): give a window of at least {MIN_W + 2} positions"
        else:
            remedy = f"no W fits ({MIN_W} <= W < S): give a larger S or a window with L/3 > {MIN_W}"
        # the option to change: W where a smaller one fits, else the S given or the window (a review: --L 2 blamed
        # the --W nobody gave)
        option = "--W" if S > MIN_W else "--S" if given and L - 1 > MIN_W else "--L"
        raise ParameterError(f"W = {W} must be much smaller than S = {S} (STRING needs W << S); {remedy}", option)
    if 4 * W > S:
        notes.append(f"W = {W} is more than S/4 = {S / 4:.0f}: W << S holds only loosely")
    n = L if test_length is None else check_window(test_length, "test length")
    if n <= S:
        notes.append(
            f"test length {n} is at most S = {S}: no distance reaches S, so STRING changes nothing at that length"
        )
    extension = None
    if extend_to is not None:
        extension = string_yarn(L, S, W, check_window(extend_to, "extend_to N"), rope_theta=rope_theta)
        if extension.yarn is None and extension.largest_position >= L:  # their rule leaves positions past L - 1
            notes.append(
                f"at N = {extension.N} the repository's rule uses positions up to {extension.largest_position}, "
                f"past L - 1 = {L - 1}, with no YaRN (factor {extension.factor:.4g} <= 1): untrained positions"
            )
    elif n > L:
        notes.append(
            f"test length {n} exceeds L = {L}: STRING improves use of the training window; beyond L combine "
            "it with an extrapolation method (extend_to adds the STRING repository's STRING + YaRN rule)"
        )
    unused = min(string_positions_used(L, S, W), L)  # the first position no pair uses: beyond L - S + W and S - 1
    if wt.frequency is not None:
        shares = share_at_least(wt.frequency, L - S), share_at_least(wt.frequency, unused)
        basis = "the given frequency" if wt.rule != "schedule" else "the schedule's frequency"
    else:
        # no corpus: the full-window baseline f(i) = L - i, share of i >= x is (L - x)(L - x + 1) / (L (L + 1))
        shares = cast(tuple[float, float], tuple((L - x) * (L - x + 1) / (L * (L + 1)) for x in (L - S, unused)))
        basis = "a full window, f(i) = L - i (no corpus information)"
    reasoning = _reasoning(L, S, W, wt, S_rule, (lo, hi), within, shares, basis, given, unreachable, q)
    if extension is not None:
        reasoning += " " + _extension_sentence(L, extension, wt.N if wt.rule != "default" else None)
    return StringPlan(L, S, W, wt, S_rule, (lo, hi), within, shares[0], basis, n, reasoning, tuple(notes), shares[1],
                      given, extension)  # fmt: skip


def _extension_sentence(L: int, e: StringYarn, N_star: int | None = None) -> str:
    head = (
        f"Beyond L, the STRING repository's rule ({STRING_YARN_SOURCE}, theirs, not the paper's) applies STRING to "
        f"the test length N = {e.N} with shifted_offset = int((S/L)·N) = {e.S} and YaRN with factor "
        f"(N/L)·(1 - S/L) = {e.factor:.4g}: the largest position STRING uses, max({e.S}, N - {e.S} + W) - 1 = "
        f"{e.largest_position}, "
    )
    if e.yarn is None and e.largest_position < L:
        return head + (
            f"is already below L = {L}, so no YaRN is needed (factor <= 1; their patch still takes yarn_factor, "
            f"and 1.0 keeps the stock frequencies, though it still scales attention by {STRING_YARN_ATTENTION:.4f})."
        )
    if e.yarn is None:  # no YaRN, and STRING's positions pass L: say which distances
        shifted_last = e.N - e.S + e.W - 1
        past = [f"the distances below {e.S} keep their positions, up to {e.S - 1}"] if e.S - 1 >= L else []
        if shifted_last >= L:
            past.append(
                f"the shifted distances reach N - {e.S} + W - 1 = {shifted_last}, {shifted_last - L + 1} past L - 1"
            )
        return head + (
            f"is not below L = {L}, and the factor is at most 1 (no YaRN; their patch takes yarn_factor 1.0, the "
            f"stock frequencies, and still scales attention by {STRING_YARN_ATTENTION:.4f}): {'; '.join(past)}; the "
            "model never trained positions past L - 1."
        )
    scaled = round(e.largest_position / e.factor)  # rounded once: the distances below are of the number shown
    where = f"{scaled - (L - 1)} past L - 1 = {L - 1}" if scaled > L - 1 else f"within L = {L}"
    if N_star is not None and scaled > N_star - 1:  # the rule scales to L, not to the well-trained range
        where += f", {scaled - (N_star - 1)} past the well-trained N* - 1 = {N_star - 1}"
    return head + (
        f"becomes {scaled} after YaRN ({where}). Their rule scales STRING's positions to about L, whatever N*. "
        "Their patch (string_for_qwen2.py) "
        f"is written for Qwen2 (original length 32768 hard-coded) and scales attention by 0.1·ln(2) + 1 = "
        f"{STRING_YARN_ATTENTION:.4f} whatever the factor; the YaRN blocks carry that attention_factor. "
        + PATCH_DOES_YARN
    )


def freqlab_lines(S: int, W: int, max_length: int | None = None) -> tuple[str, str]:
    """freqlab's own lines for a STRING plan: :func:`freqlab.apply.string` and ``freqlab probe`` (up to
    ``max_length``, else the model's window).
    """
    up_to = f" --max-length {max_length}" if max_length is not None else ""
    return f"freqlab.apply.string(model, {S}, {W})", f"freqlab probe MODEL --string {S},{W}{up_to}"


#: the printed call is string_for_qwen2's: it swaps in its own YaRN rotary embedding, so a rope_scaling block would be
#: ignored there (and string_for_llama's call takes no yarn_factor: its rotary embedding reads only llama3 blocks)
PATCH_DOES_YARN = (
    "That patch applies YaRN itself from its yarn_factor argument (its own rotary embedding replaces the model's): "
    "load the model without a rope_scaling block for it; the YaRN blocks are for STRING implementations that read "
    "the model's config (string_for_llama.py has no YaRN)."
)


def _unreachable(L: int, W: int) -> str:
    """Why no shift keeps STRING within a short well-trained range."""
    best = (L + W + 1) // 2  # max(S, L - S + W) is smallest at S = ceil((L + W) / 2)
    return (
        f"S uses positions up to max(S, L - S + W) - 1, at least {best - 1} (at S = ceil((L + W)/2) = {best}), and "
        "the frequency rule S = L - N* + W keeps them below N* only when L - N* + W <= N*"
    )


def _paper_range(L: int) -> str:
    """L/3..L/2 written to two decimals where they are not whole, never rounded onto a whole S: 1365.33..2048.

    >>> _paper_range(4096), _paper_range(1 << 20), _paper_range(3 << 20)
    ('1365.33..2048', '349525.33..524288', '1048576..1572864')
    """

    def exact(numerator: int, denominator: int) -> str:
        whole, rest = divmod(numerator, denominator)
        return str(whole) if not rest else f"{whole}.{(100 * rest) // denominator:02d}"  # cut, never up to a whole

    return f"{exact(L, 3)}..{exact(L, 2)}"


def _reasoning(
    L, S, W, wt: WellTrained, S_rule, bounds, within, shares, basis, given: bool, unreachable: bool, q: int
) -> str:
    lo, hi = bounds
    head = f"Training window L = {L}. "
    paper_range = f"the paper's range L/3 <= S <= L/2 (Sec. 4.1; {lo}..{hi} after rounding)"
    if given:  # a given S is held to the range itself, L/3 not rounded up
        rule = f"S = {S} (S/L = {S / L:.3f}) was given and is evaluated: it lies {'inside' if within else 'outside'} " \
               f"the paper's range L/3 <= S <= L/2 (Sec. 4.1; {_paper_range(L)}). "  # fmt: skip
        if S_rule is not None:
            rule += f"The frequency rule would give S = {S_rule} ({wt.rule} rule, N* = {wt.N}). "
        elif unreachable:
            rule += f"No S keeps every position used below N* = {wt.N} ({wt.rule} rule): {_unreachable(L, W)}. "
    elif unreachable:
        rule = (
            f"Well-trained range ({wt.rule} rule): {wt.explanation}, so N* = {wt.N}. No S keeps every position "
            f"STRING uses within 0..N* - 1: {_unreachable(L, W)}. freqlab recommends the paper's upper end "
            f"S = {S} (S/L = {S / L:.3f}), which of {paper_range} uses the fewest positions. "
        )
    elif wt.rule == "default":
        rule = (
            f"Without frequency information freqlab uses the paper's setting S = L/3 (Sec. 4.1), rounded up to "
            f"S = {S} so that it stays in {paper_range}. "
        )
    else:
        rule = (
            f"Well-trained range ({wt.rule} rule): {wt.explanation}, so N* = {wt.N}. The frequency rule keeps every "
            f"position STRING uses, up to L - S + W - 1, within 0..N* - 1: S = L - N* + W"
            + (
                ", rounded up, gives "
                if S_rule != L - wt.N + W
                else f" (not rounded: the next multiple of {q} passes N*) gives "
                if S_rule % q
                else " gives "
            )
            + f"S = {S_rule} (S/L = {S_rule / L:.3f}). "
        )
        if within:
            rule += f"This lies inside {paper_range}. "
        elif S_rule < lo:
            readme_lo, readme_hi = (L * x for x in OFFICIAL_README_RANGE)
            official = (
                "it lies in the 0.25-0.4 L that the official repository's README suggests, but "
                if readme_lo <= S_rule <= readme_hi
                else ""
            )
            rule += (
                f"This is below {paper_range}: {official}in the paper's ablation (Fig. 7, S from L/5 to L/2) "
                f"performance still grew with S up to L/3, so freqlab recommends S = {S} (S/L = {S / L:.3f}). "
                f"To follow the frequency rule instead, use shifted_offset = {S_rule}. "
            )
        else:
            rule += (
                f"This is above {paper_range}, beyond which the paper did not test (Fig. 7 stops at L/2), so "
                f"freqlab recommends S = {S} (S/L = {S / L:.3f}). To follow the frequency rule instead, use "
                f"shifted_offset = {S_rule}. "
            )
    largest = string_positions_used(L, S, W) - 1
    fits = f"{'within' if largest < wt.N else 'beyond'} the well-trained 0..{wt.N - 1}" if wt.N else "none well trained"
    if wt.rule == "default":
        fits = "no frequency information says which are well trained"
    moved = (
        f"STRING drops the distances >= L - S = {L - S} and uses positions 0..{largest} instead ({fits})"
        if S <= L - S
        else f"STRING moves the distances >= S = {S} to r - S + W; those from L - S = {L - S} to S - 1 keep their "
        f"positions, so it uses positions 0..{largest} ({fits})"  # a given S past L/2
    )
    tail = (
        f"{moved}, with local window W = {W} (W >= 32 and W << S, Fig. 7). Under {basis}, "
        f"positions >= L - S = {L - S} (overwritten) carried {shares[0]:.2%} of all position occurrences, and "
        f"positions >= max(S, L - S + W) = {largest + 1} (never used after STRING) {shares[1]:.2%}."
    )
    return head + rule + tail
