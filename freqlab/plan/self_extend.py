"""Self-Extend: grouped attention with the FLOOR operation beyond the training window (Jin et al., "LLM Maybe
LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024, arXiv:2401.01325).

Tokens within the neighbour window w_n keep their exact relative position r = m - n; farther tokens use
grouped positions: the query at m gets m // G + (w_n - w_n // G), the key at n gets n // G (Sec. 3.2, the
official pseudo-code), so a pair at r >= w_n uses

    p(m, n) = m // G - n // G + w_n - w_n // G.

The largest position a sequence of N tokens uses is therefore (N - 1) // G + w_n - w_n // G, and it stays
below L up to

    N_max = (L - w_n + w_n // G) · G,

which is Eq. 8, (L - w_n) · G + w_n, whenever G divides w_n (llama.cpp requires that).

The paper gives no rule for choosing G and w_n; it reports settings. For Llama-2-7b-chat 4K -> 16K
(Sec. 4.1, Table 1): "group size G set as 8 and neighbor window w_n set as 1024", which Eq. 8 takes to
(4096 - 1024) · 8 + 1024 = 25,600 tokens. Planning here follows the *maintainers'* rule of thumb (official
repository, not the paper) and llama.cpp's divisibility requirement: the positions used should stay inside
the *well-trained* range N*, which freqlab predicts from a frequency curve (:mod:`freqlab.plan.well_trained`);
the maintainers' guess, 1/2 to 2/3 of L, is the default without one and is shown beside every plan:

    (L - w_n) · G + w_n >= N        and        w_n + (N - w_n) / G <= N*.

Both bound w_n from above for a given G (w_n <= (G·N* - N)/(G - 1) and w_n <= (G·L - N)/(G - 1)), so the
planner takes the smallest G for which a neighbour window in [min_window, max_window] (default [L/8, L/4],
inside the maintainers' 512..1536 for 4K models) divisible by G fits, and the largest such w_n (a larger
window keeps more positions exact). This rule rejects the paper's own setting at N* = 2/3 L: for
4K -> 16K, 1024 + (16384 - 1024)/8 = 2944 > 2730. Every plan therefore shows the paper's setting beside
its recommendation (:attr:`SelfExtendPlan.paper_setting`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Unpack

import numpy as np

from freqlab.display import Display, Displayed
from freqlab.errors import FreqlabError
from freqlab.plan import display as shown
from freqlab.plan.well_trained import (
    DEFAULT_FRACTION,
    FrequencyInputs,
    WellTrained,
    WellTrainedBasis,
    check_window,
    json_fields,
    well_trained_range,
)
from freqlab.sizes import MAX_POSITIONS

MAX_GROUP: int = 64  # maintainers' range for G: 2..64
# The paper's setting for Llama-2-7b-chat 4K -> 16K (Sec. 4.1, Table 1): G = 8, w_n = 1024 (Eq. 8: 25,600 tokens)
PAPER_L, PAPER_N, PAPER_GROUP, PAPER_WINDOW = 4096, 16384, 8, 1024
#: the maintainers' guess at the well-trained share of L (datamllab/LongLM README): 1/2 to 2/3
MAINTAINERS_GUESS: tuple[Fraction, Fraction] = (Fraction(1, 2), Fraction(2, 3))
#: which llama.cpp binaries take Self-Extend's flags (common/arg.cpp: --grp-attn-n for LLAMA_EXAMPLE_COMPLETION and
#: LLAMA_EXAMPLE_PASSKEY, --grp-attn-w for LLAMA_EXAMPLE_COMPLETION only)
LLAMA_CPP_NOTE = (
    "llama.cpp: llama-completion takes --grp-attn-n and --grp-attn-w (before ggml-org/llama.cpp#17824 split it off, "
    "Dec 2025, that program was llama-cli; before #7809, main); the new llama-cli does not, llama-passkey takes "
    "--grp-attn-n only, and llama-server dropped both (#9860); llama.cpp needs w_n divisible by G"
)


def _check_group(G, w_n, L: int | None = None) -> tuple[int, int]:
    """G an integer 1 <= G <= 2^30 (:data:`~freqlab.sizes.MAX_POSITIONS`: a larger group puts every position of any
    window in group 0, and past 2^63 torch's integer division wraps), w_n an integer 0 <= w_n (< L when L is
    given), else a FreqlabError naming the value.
    """
    if isinstance(G, bool) or not isinstance(G, (int, np.integer)) or not 1 <= int(G) <= MAX_POSITIONS:
        raise FreqlabError(f"group size G must be an integer from 1 to {MAX_POSITIONS:,}, got {G!r}")
    bound = f" < L = {L}" if L is not None else ""
    if (
        isinstance(w_n, bool)
        or not isinstance(w_n, (int, np.integer))
        or int(w_n) < 0
        or (L is not None and int(w_n) >= L)
    ):
        raise FreqlabError(f"neighbour window w_n must be an integer with 0 <= w_n{bound}, got {w_n!r}")
    return int(G), int(w_n)


def self_extend_max_length(L: int, G: int, w_n: int) -> int:
    """Longest sequence whose grouped positions all stay below L: (L - w_n + w_n // G) · G.

    Equals Eq. 8, (L - w_n) · G + w_n, when G divides w_n.

    Parameters
    ----------
    L : int
        Training window (the model's max_position_embeddings).
    G : int
        Group size (the FLOOR divisor).
    w_n : int
        Neighbour window: pairs closer than w_n keep their position.

    Returns
    -------
    int
        The longest sequence whose grouped positions all stay below L.

    References
    ----------
    .. [1] Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024,
           arXiv:2401.01325.

    Examples
    --------
    >>> self_extend_max_length(7, 2, 4)  # Fig. 3
    10
    >>> self_extend_max_length(4096, 8, 1024)  # Llama-2 4K, Table 1 setting
    25600
    """
    L = check_window(L)
    G, w_n = _check_group(G, w_n, L)
    return (L - w_n + w_n // G) * G


def self_extend_eq8(L: int, G: int, w_n: int) -> int:
    """Eq. 8 as printed: (L - w_n) · G + w_n."""
    return (int(L) - int(w_n)) * int(G) + int(w_n)


def self_extend_largest_position(N: int, G: int, w_n: int) -> int:
    """Largest relative position a sequence of N tokens uses under Self-Extend.

    max(w_n - 1, (N - 1) // G + w_n - w_n // G) when N > w_n, else N - 1 (no grouping happens).

    Parameters
    ----------
    N : int
        Sequence length.
    G : int
        Group size (the FLOOR divisor).
    w_n : int
        Neighbour window: pairs closer than w_n keep their position.

    Returns
    -------
    int
        The largest relative position used.

    References
    ----------
    .. [1] Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024,
           arXiv:2401.01325.

    Examples
    --------
    >>> self_extend_largest_position(10, 2, 4), self_extend_largest_position(11, 2, 4)
    (6, 7)
    """
    N = check_window(N, "sequence length N")
    G, w_n = _check_group(G, w_n)
    if w_n >= N:  # every pair is inside the neighbour window
        return N - 1
    return max(w_n - 1, (N - 1) // G + w_n - w_n // G)


def self_extend_position_matrix(N: int, G: int, w_n: int) -> np.ndarray:
    """Relative positions Self-Extend uses for N tokens (int64, upper triangle -1); for checks on small N.

    Parameters
    ----------
    N : int
        Sequence length (small: the matrix is N x N).
    G : int
        Group size (the FLOOR divisor).
    w_n : int
        Neighbour window: pairs closer than w_n keep their position.

    Returns
    -------
    numpy.ndarray
        int64 of shape (N, N): the position of each query-key pair; -1 above the diagonal.

    References
    ----------
    .. [1] Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024,
           arXiv:2401.01325.
    """
    N = check_window(N, "sequence length N")
    G, w_n = _check_group(G, w_n)
    idx = np.arange(N, dtype=np.int64)
    r = idx[:, None] - idx[None, :]
    grouped = idx[:, None] // G - idx[None, :] // G + w_n - w_n // G
    out = np.where(r < w_n, r, grouped)
    out[r < 0] = -1
    return out


def _rule(value: float | None) -> str:
    """The rule-of-thumb value as shown: whole numbers as they are, others to two decimals or as many more as keep
    them off a whole number (rounded to one, 2730.33 read "2730 (> N* = 2730)", a review); "-" when there is none.
    """
    if value is None:
        return "-"
    if float(value).is_integer():
        return f"{value:.0f}"
    # enough decimals that no value off a whole number reads as one (1/G: 2730.0039 with G = 256)
    return next(f"{value:.{d}f}" for d in range(2, 10) if not float(f"{value:.{d}f}").is_integer())


@dataclass(frozen=True, repr=False)
class SelfExtendCheck(Displayed):
    """Evaluation of a given (G, w_n) for window L (and optionally target N)."""

    L: int
    G: int
    w_n: int
    max_length: int
    eq8_length: int
    N: int | None
    largest_position: int | None
    rule_of_thumb: float | None  # w_n + (N - w_n) / G
    N_star: int | None
    fits: bool | None  # largest_position < L
    well_trained: bool | None  # rule_of_thumb <= N*
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The check as JSON-ready data."""
        return json_fields(self)

    def report(self) -> str:
        """The terminal report of a given (G, w_n): Eq. 8's max length and, for a target N, the largest position
        used and the rule of thumb against N*.
        """
        lines = [
            f"Given G = {self.G}, w_n = {self.w_n}:",
            f"  max length (L - w_n + w_n // G)·G = {self.max_length} (Eq. 8: {self.eq8_length})",
        ]
        if self.N is not None:
            fits = "< L" if self.fits else ">= L: out of distribution"
            lines.append(f"  largest position used at N = {self.N}: {self.largest_position} ({fits})")
            verdict = "" if self.N_star is None else f" ({'<=' if self.well_trained else '>'} N* = {self.N_star})"
            lines.append(f"  w_n + (N - w_n)/G = {_rule(self.rule_of_thumb)}{verdict}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _display(self) -> Display:
        return shown.self_extend_check_display(self)


def evaluate_self_extend(
    L: int, G: int, w_n: int, N: int | None = None, *, well_trained: int | None = None
) -> SelfExtendCheck:
    """Max length and, for a target N, the largest position used and whether it stays (well) trained.

    Parameters
    ----------
    L : int
        Training window.
    G : int
        Group size.
    w_n : int
        Neighbour window.
    N : int, optional
        Target length.
    well_trained : int, optional
        N*, the end of the well-trained positions (e.g. from :func:`well_trained_range`).

    Returns
    -------
    SelfExtendCheck
        ``max_length``, ``largest_position``, the maintainers' ``rule_of_thumb``, ``fits`` and ``well_trained``.

    Notes
    -----
    Beyond w_n a pair uses p(m, n) = m // G − n // G + w_n − w_n // G, so the largest position of N tokens is
    (N − 1) // G + w_n − w_n // G and N_max = (L − w_n + w_n // G) · G (the paper's Eq. 8,
    (L − w_n) · G + w_n, when G divides w_n [1]_). The rule of thumb is w_n + (N − w_n) / G.

    References
    ----------
    .. [1] H. Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024,
           arXiv:2401.01325.

    Examples
    --------
    >>> c = evaluate_self_extend(4096, 8, 1024, 16384, well_trained=2730)
    >>> c.max_length, c.largest_position, c.rule_of_thumb, c.fits, c.well_trained
    (25600, 2943, 2944.0, True, False)
    """
    L = check_window(L)
    G, w_n = _check_group(G, w_n, L)
    notes = []
    if w_n % G:
        notes.append(f"w_n = {w_n} is not divisible by G = {G}: llama.cpp rejects it")
    if not 2 <= G <= MAX_GROUP:
        notes.append(f"G = {G} is outside the maintainers' range 2..{MAX_GROUP}")
    if w_n == 0 and G > 1:  # allowed (0 <= w_n < L), but no pair keeps its own position: said (a review)
        notes.append(
            "w_n = 0: no neighbour window, so every pair takes its grouped position m // G - n // G, and tokens "
            "of one group see each other at position 0"
        )
    if well_trained is not None and not (check_window(well_trained, "well_trained N*") <= L):
        raise FreqlabError(f"the well-trained range N* must be an integer in 1..L = {L}, got {well_trained!r}")
    largest = rule = fits = good = None
    if N is not None:
        N = check_window(N, "target length N")
        largest = self_extend_largest_position(N, G, w_n)
        rule = w_n + (N - w_n) / G
        fits = largest < L
        if well_trained is not None:  # w_n + (N - w_n)/G <= N*, multiplied by G to stay in integers
            good = G * w_n + (N - w_n) <= G * int(well_trained)
    return SelfExtendCheck(
        L,
        G,
        w_n,
        self_extend_max_length(L, G, w_n),
        self_extend_eq8(L, G, w_n),
        N,
        largest,
        rule,
        None if well_trained is None else int(well_trained),
        fits,
        good,
        tuple(notes),
    )


@dataclass(frozen=True, repr=False)
class SelfExtendPlan(WellTrainedBasis, Displayed):
    """Chosen (G, w_n) for extending a window-L model to N tokens, with reasoning and paste-ready calls."""

    L: int
    N: int
    G: int
    w_n: int
    well_trained: WellTrained
    check: SelfExtendCheck
    reasoning: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    guesses: tuple[tuple[int, int | None, int | None], ...] = ()  # (N*, G, w_n) at 1/2 L and 2/3 L

    @property
    def hf_call(self) -> str:
        """Official Hugging Face call (datamllab/LongLM)."""
        return f"SelfExtend.apply(model, {self.G}, {self.w_n})  # group_size, window_size"

    @property
    def freqlab_apply(self) -> str:
        """The plan on a loaded Hugging Face model, in Python (:func:`freqlab.apply.self_extend`)."""
        return f"freqlab.apply.self_extend(model, {self.G}, {self.w_n})"

    @property
    def freqlab_probe(self) -> str:
        """The effective length measured with and without the plan, up to N (``freqlab probe``)."""
        return f"freqlab probe MODEL --self-extend {self.G},{self.w_n} --max-length {self.N}"

    @property
    def llama_cpp_flags(self) -> str:
        """The llama.cpp flags of the plan (``--grp-attn-n G --grp-attn-w w_n``)."""
        return f"--grp-attn-n {self.G} --grp-attn-w {self.w_n}"

    @property
    def llama_cpp_command(self) -> str:
        """The llama.cpp program that takes both flags, with the context -c N (:data:`LLAMA_CPP_NOTE`)."""
        return f"llama-completion -m MODEL.gguf -c {self.N} {self.llama_cpp_flags}"

    @property
    def paper_setting(self) -> SelfExtendCheck | None:
        """The paper's G = 8, w_n = 1024 (Sec. 4.1, Table 1: Llama-2-7b-chat 4K -> 16K) evaluated for this
        L, N and N*; None when w_n = 1024 does not fit below L.
        """
        return paper_setting(self.L, self.N, self.N_star)

    def to_dict(self) -> dict:
        """The plan as JSON-ready data."""
        paper = self.paper_setting
        return self._plan_dict(
            "self-extend",
            skip=("check", "guesses"),
            maintainers_guess=[{"N_star": n, "G": g, "w_n": w} for n, g, w in self.guesses],
            max_length=self.check.max_length,
            largest_position=self.check.largest_position,
            rule_of_thumb=self.check.rule_of_thumb,
            hf_call=self.hf_call,
            freqlab_apply=self.freqlab_apply,
            freqlab_probe=self.freqlab_probe,
            llama_cpp_flags=self.llama_cpp_flags,
            llama_cpp_command=self.llama_cpp_command,
            paper_setting=None if paper is None else paper.to_dict(),
        )

    def report(self) -> str:
        """The terminal report of ``freqlab plan self-extend``: G and w_n, N*, the maintainers' guesses, the paper's
        setting evaluated here, the reasoning and the Hugging Face and llama.cpp settings.
        """
        guesses = "; ".join(f"N* = {n}: " + (f"G = {g}, w_n = {w}" if g else "no setting") for n, g, w in self.guesses)
        lines = [
            f"Self-Extend for L = {self.L} -> N = {self.N}: G = {self.G}, w_n = {self.w_n} "
            "(smallest G with w_n + (N - w_n)/G <= N*)",
            f"  well-trained range N* = {self.N_star} (rule: {self.rule}); max length {self.check.max_length}",
            f"  maintainers' guess N* = 1/2..2/3 L: {guesses}",
        ]
        paper = self.paper_setting
        if paper is not None:
            verdict = "<=" if paper.well_trained else ">"
            lines.append(
                f"  paper's setting (Sec. 4.1, Table 1, Llama-2 4K -> 16K): G = {paper.G}, w_n = {paper.w_n}; "
                f"max length {paper.max_length} here (Eq. 8), w_n + (N - w_n)/G = {_rule(paper.rule_of_thumb)} "
                f"{verdict} N* = {paper.N_star}"
            )
        lines += ["", self.reasoning, *(f"note: {note}" for note in self.notes)]
        lines += shown.block("Hugging Face (official LongLM code):", [self.hf_call])
        lines += shown.block("llama.cpp:", [self.llama_cpp_command, f"note: {LLAMA_CPP_NOTE}"])
        lines += shown.block(shown.FREQLAB_BLOCK, [self.freqlab_apply, self.freqlab_probe])
        return "\n".join(lines)

    def _display(self) -> Display:
        return shown.self_extend_display(self)


def paper_setting(L: int, N: int, N_star: int) -> SelfExtendCheck | None:
    """The paper's (G, w_n) = (8, 1024) evaluated for window L, target N and well-trained range N*
    (None when L <= 1024).

    >>> c = paper_setting(4096, 16384, 2730)  # the paper's own case, against the maintainers' 2/3 L
    >>> c.eq8_length, c.rule_of_thumb, c.well_trained
    (25600, 2944.0, False)
    """
    if PAPER_WINDOW >= L:
        return None
    return evaluate_self_extend(L, PAPER_GROUP, PAPER_WINDOW, N, well_trained=N_star)


def _paper_sentence(check: SelfExtendCheck | None, lo: int, hi: int) -> str:
    """The paper's setting beside the recommendation, and whether the selection rule accepts it."""
    head = (
        f"The paper reports settings, not a selection rule: for Llama-2-7b-chat {PAPER_L} -> {PAPER_N}, "
        f"G = {PAPER_GROUP}, w_n = {PAPER_WINDOW} (Sec. 4.1, Table 1; Eq. 8: (4096 - 1024)·8 + 1024 = 25600 tokens)"
    )
    if check is None:
        return head + f", which does not fit this window (w_n = {PAPER_WINDOW} >= L)."
    why = []
    if not check.fits:
        why.append(f"its largest position at N is {check.largest_position} >= L")
    if not check.well_trained:
        why.append(f"w_n + (N - w_n)/G = {_rule(check.rule_of_thumb)} > N* = {check.N_star}")
    if not lo <= PAPER_WINDOW <= hi:
        why.append(f"w_n = {PAPER_WINDOW} is outside [{lo}, {hi}]")
    verdict = (
        "the rule above rejects it: " + "; ".join(why)
        if why
        else f"it passes the rule above (w_n + (N - w_n)/G = {_rule(check.rule_of_thumb)} <= N* = {check.N_star}), "
        "which prefers the smallest G"
    )
    return head + f". Here it reaches {check.max_length} tokens and {verdict}."


def largest_window(L: int, N: int, N_star: int, G: int) -> int:
    """Largest w_n divisible by G with (L - w_n)·G + w_n >= N and w_n + (N - w_n)/G <= N* (-1 if none).

    >>> largest_window(4096, 16384, 2730, 8)
    776
    """
    if G < 2:
        return -1
    bound = min((G * L - N) // (G - 1), (G * N_star - N) // (G - 1), L - 1)
    return (bound // G) * G if bound >= 0 else -1


def neighbour_windows(L: int, min_window: int | None = None, max_window: int | None = None) -> tuple[int, int]:
    """The neighbour windows w_n the planner tries, ``(min_window, max_window)``: [L/8, L/4] where not given.

    >>> neighbour_windows(4096), neighbour_windows(4096, max_window=300)
    ((512, 1024), (512, 300))
    """
    lo = max(L // 8, 1) if min_window is None else check_window(min_window, "min_window")
    return lo, (L // 4 if max_window is None else check_window(max_window, "max_window"))


def plan_self_extend(
    L: int,
    N: int,
    *,
    well_trained: int | None = None,
    default_fraction: Fraction | float = DEFAULT_FRACTION,
    min_window: int | None = None,
    max_window: int | None = None,
    max_group: int = MAX_GROUP,
    **frequency: Unpack[FrequencyInputs],
) -> SelfExtendPlan:
    """Choose Self-Extend's group size G and neighbour window w_n for a window-L model and target N.

    Picks the smallest G (and the largest w_n divisible by G, within [min_window, max_window]) with
    (L − w_n) · G + w_n >= N and w_n + (N − w_n)/G <= N*.

    Parameters
    ----------
    L : int
        Training window.
    N : int
        Target length.
    well_trained : int, optional
        N*; else derived by :func:`well_trained_range` from the frequency keywords or, with no information,
        ``default_fraction`` of L.
    default_fraction : Fraction or float
        N* / L when nothing is known: 2/3, the generous end of the maintainers' 1/2..2/3.
    min_window, max_window : int, optional
        Bounds on w_n (default [L/8, L/4]: the maintainers use 512..1536 for 4K models, the paper w_n = 1024).
    max_group : int
        Largest G tried (the maintainers' range is 2..64).
    **frequency
        ``histogram`` + ``regime``, ``frequency`` or ``schedule``; ``tokens``, ``tau``, ``mass``
        (see :func:`well_trained_range`).

    Returns
    -------
    SelfExtendPlan
        ``G``, ``w_n``, N*, the check of :func:`evaluate_self_extend` and the ``llama_cpp_flags``.

    Notes
    -----
    Self-Extend [1]_ keeps exact positions within w_n and uses floor-grouped positions beyond it; its
    maximum length is N_max = (L − w_n) · G + w_n (Eq. 8).

    References
    ----------
    .. [1] H. Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024,
           arXiv:2401.01325.

    Examples
    --------
    >>> p = plan_self_extend(4096, 16384)
    >>> p.G, p.w_n, p.llama_cpp_flags
    (8, 776, '--grp-attn-n 8 --grp-attn-w 776')
    """
    L = check_window(L)
    N = check_window(N, "target length N")
    if N <= L:
        raise FreqlabError(
            f"target length N = {N} is not above the training window L = {L}: Self-Extend extends beyond L "
            "(within L, see `freqlab plan string`)"
        )
    if isinstance(max_group, bool) or not isinstance(max_group, (int, np.integer)) or max_group < 2:
        raise FreqlabError(f"max_group must be an integer of at least 2, got {max_group!r}")
    wt = well_trained_range(L, given=well_trained, default_fraction=default_fraction, **frequency)
    N_star = wt.N
    lo, hi = neighbour_windows(L, min_window, max_window)
    if not 0 < lo <= hi < L:
        given = min_window is not None or max_window is not None
        raise FreqlabError(
            f"need 0 < min_window <= max_window < L, got {lo} and {hi}"
            + ("" if given else f" (the defaults L/8 and L/4: L = {L} is too short for a neighbour window)")
        )
    if N_star <= lo:
        raise FreqlabError(
            f"the well-trained range N* = {N_star} is not above the smallest neighbour window {lo}: "
            "no Self-Extend setting keeps the used positions well trained"
        )
    chosen = _smallest_group(L, N, N_star, lo, hi, max_group)
    if chosen is None:
        raise FreqlabError(
            f"no group size G <= {max_group} reaches N = {N} from L = {L} with the used positions inside "
            f"N* = {N_star} and w_n in [{lo}, {hi}]; lower the target or the minimum window"
        )
    G, w_n = chosen
    guesses = tuple(
        (n, *(_smallest_group(L, N, n, lo, hi, max_group) or (None, None)))
        for n in (L * x.numerator // x.denominator for x in MAINTAINERS_GUESS)
    )
    check = evaluate_self_extend(L, G, w_n, N, well_trained=N_star)
    reasoning = (
        f"Training window L = {L}, target N = {N}. Well-trained range ({wt.rule} rule): {wt.explanation}, "
        f"so N* = {N_star}. Selection rule (the Self-Extend maintainers' rule of thumb and llama.cpp's "
        f"divisibility requirement, not the paper's): the smallest group size whose grouped positions for N "
        f"tokens stay within N* is G = {G}, with the largest neighbour window divisible by G in [{lo}, {hi}] that "
        f"keeps them there, w_n = {w_n}: w_n + (N - w_n)/G = {_rule(check.rule_of_thumb)} <= {N_star}; the largest "
        "position used is "
        f"{check.largest_position} < L, and this setting reaches up to (L - w_n)·G + w_n = "
        f"{check.max_length} tokens (Eq. 8). "
        + _guess_sentence(wt.rule, guesses)
        + _paper_sentence(paper_setting(L, N, N_star), lo, hi)
    )
    return SelfExtendPlan(L, N, G, w_n, wt, check, reasoning, check.notes, guesses)


def _smallest_group(L: int, N: int, N_star: int, lo: int, hi: int, max_group: int) -> tuple[int, int] | None:
    """The smallest G (2..max_group) with a window in [lo, hi] divisible by G keeping w_n + (N - w_n)/G <= N*
    and (L - w_n)·G + w_n >= N, and the largest such window; None if there is none.
    """
    if N_star <= lo:
        return None
    for G in range(2, int(max_group) + 1):
        w_n = min(largest_window(L, N, N_star, G), (hi // G) * G)
        if w_n >= lo:
            return G, w_n
    return None


def _guess_sentence(rule: str, guesses) -> str:
    """The maintainers' 1/2-2/3 L guess beside the N* the plan used."""
    shown = "; ".join(f"N* = {n}: " + (f"G = {g}, w_n = {w}" if g is not None else "no setting") for n, g, w in guesses)
    used = "it is the default here (no frequency information)" if rule == "default" else f"the {rule} rule replaced it"
    return f"The maintainers' rule of thumb guesses N* at 1/2 to 2/3 of L ({shown}); {used}. "
