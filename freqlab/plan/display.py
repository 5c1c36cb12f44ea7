"""How the plans show themselves (:mod:`freqlab.display`): a short repr with the recommended values, and in a
notebook a table of the numbers, the paste-ready blocks, the reasoning folded away and, where it helps, a plot.

One function per plan class; each class's ``_display()`` calls it. They read the plans' attributes only, so this
module imports no planner.
"""

from __future__ import annotations

import json

import numpy as np

from freqlab.display import (
    HEAD_SHADE,
    PALETTE,
    TAIL_SHADE,
    Chart,
    Display,
    Series,
    clip,
    count,
    curve_svg,
    nice_ticks,
    percent,
    svg_chart,
)
from freqlab.frequency.regime_table import human_count
from freqlab.sizes import position_label


def _window(L: int) -> str:
    return f"{L} ({position_label(L)})" if L >= 1024 else str(L)


def _notes(notes) -> list[tuple[str, str]]:
    return [("note", note) for note in notes]


#: the title of the block of freqlab's own lines in a plan (freqlab.apply, freqlab probe)
FREQLAB_BLOCK = "freqlab (the plan on a loaded model; its effective length measured with and without):"


def block(title: str, lines) -> list[str]:
    """A titled block of the terminal reports: a blank line, ``title``, then each line indented by two spaces."""
    return ["", title, *(f"  {line}" for line in lines)]


def well_trained_rows(wt) -> list[tuple[str, str]]:
    """Rows of a :class:`~freqlab.plan.well_trained.WellTrained`: N*, its rule and what it came from."""
    rows = [("well-trained range N*", f"{wt.N} (rule: {wt.rule})")]
    if wt.tokens is not None:
        rows.append(("budget T", f"{human_count(wt.tokens)} tokens"))
    if wt.tau is not None and wt.rule in ("budget", "schedule"):
        rows.append(("threshold tau", human_count(wt.tau)))
    if wt.mass is not None and wt.rule == "mass":
        rows.append(("mass rule", percent(wt.mass, 0)))
    return rows


def well_trained_display(wt) -> Display:
    """How a well-trained range shows in a notebook."""
    figure = None
    if wt.frequency is not None:
        figure = curve_svg(wt.frequency, shades=[(0, wt.N, HEAD_SHADE)])
    rows = [("window L", _window(wt.L)), *well_trained_rows(wt), ("how", wt.explanation)]
    return Display(f"WellTrained L = {wt.L}", f"N* = {wt.N} (rule: {wt.rule})", [wt.explanation], rows, figure=figure)


def string_display(p) -> Display:
    """StringPlan: S, W, N*; the shaded positions >= L - S are the ones STRING overwrites."""
    headline = f"S = {p.S} (S/L = {p.ratio:.3f}), W = {p.W}; N* = {p.N_star} (rule: {p.rule})"
    rows = [
        ("window L", _window(p.L)),
        ("shift S", f"{p.S} (S/L = {p.ratio:.3f})"),
        ("local window W", str(p.W)),
        *well_trained_rows(p.well_trained),
        ("S from the frequency rule alone", "-" if p.S_rule is None else str(p.S_rule)),
        ("paper's range [L/3, L/2] (Sec. 4.1)", f"{p.S_range[0]}..{p.S_range[1]}"),
        (
            "largest position used, max(S, L − S + W) − 1",
            f"{p.largest_position} ({'within' if p.within_well_trained else 'beyond'} N* − 1 = {p.N_star - 1})",
        ),
        (f"mass at overwritten positions ≥ L − S = {p.L - p.S}", percent(p.overwritten_share, 2)),
        (f"mass at never-used positions ≥ max(S, L − S + W) = {p.largest_position + 1}", percent(p.unused_share, 2)),
        ("max_test_length", str(p.test_length)),
        *_notes(p.notes),
    ]
    code = [
        ("Hugging Face (official STRING patch):", p.hf_patch),
        ("vLLM config:", p.vllm_block),
        (FREQLAB_BLOCK, f"{p.freqlab_apply}\n{p.freqlab_probe}"),
    ]
    if p.extension is not None:
        code.append((f"beyond L, STRING at N = {p.extension.N} (HKUNLP/STRING's Qwen2 rule):", p.extension.hf_patch))
        if p.extension.yarn is not None:
            code += [(f"YaRN {b.label}:", json.dumps(b.config)) for b in p.extension.yarn.blocks]
    figure = None
    f = p.well_trained.frequency
    if f is not None and np.asarray(f).size == p.L:
        figure = curve_svg(f, shades=[(p.L - p.S, p.L, TAIL_SHADE)])
    return Display(f"StringPlan L = {p.L}", headline, [p.hf_patch], rows, code=code, figure=figure, details=p.reasoning)


def self_extend_check_rows(c) -> list[tuple[str, str]]:
    """The table rows of a Self-Extend check."""
    rows = [
        ("group size G, neighbour window w_n", f"{c.G}, {c.w_n}"),
        ("max length (L − w_n + w_n // G)·G", f"{c.max_length:,} (Eq. 8: {c.eq8_length:,})"),
    ]
    if c.N is not None:
        fits = "< L" if c.fits else "≥ L: out of distribution"
        rows.append((f"largest position used at N = {c.N}", f"{c.largest_position} ({fits})"))
        rule = f"{c.rule_of_thumb:.0f}"
        if c.N_star is not None:
            rule += f" {'≤' if c.well_trained else '>'} N* = {c.N_star}"
        rows.append(("w_n + (N − w_n)/G", rule))
    return rows + _notes(c.notes)


def self_extend_check_display(c) -> Display:
    """How a Self-Extend check shows in a notebook."""
    # Eq. 8 only where G divides w_n; else the floor form (a review: 25,760 labelled Eq. 8, whose value is 25,761)
    headline = f"max length {c.max_length:,} ({'Eq. 8' if c.max_length == c.eq8_length else '(L − w_n + w_n // G)·G'})"
    if c.N is not None:
        headline += f"; at N = {c.N} largest position {c.largest_position} ({'< L' if c.fits else '≥ L'})"
        if c.well_trained is not None:
            headline += f", {'within' if c.well_trained else 'beyond'} N* = {c.N_star}"
    rows = [("window L", _window(c.L)), *self_extend_check_rows(c)]
    return Display(f"SelfExtendCheck L = {c.L}, G = {c.G}, w_n = {c.w_n}", headline, (), rows)


def self_extend_display(p) -> Display:
    """How a Self-Extend plan shows in a notebook."""
    headline = f"G = {p.G}, w_n = {p.w_n}; N* = {p.N_star} (rule: {p.rule}), max length {p.check.max_length:,}"
    rows = [
        ("window L → target N", f"{_window(p.L)} → {_window(p.N)}"),
        *well_trained_rows(p.well_trained),
        *self_extend_check_rows(p.check),
        *_notes(p.notes),
    ]
    paper = p.paper_setting
    if paper is not None:
        verdict = "accepted" if paper.well_trained else "rejected"
        rows.append(
            ("paper's G = 8, w_n = 1024 (Table 1)", f"max length {paper.max_length:,}; {verdict} by the rule here")
        )
    guesses = "; ".join(f"N* = {n}: " + (f"G = {g}, w_n = {w}" if g else "no setting") for n, g, w in p.guesses)
    if guesses:
        rows.append(("maintainers' guess N* = 1/2..2/3 L", guesses))
    code = [
        ("Hugging Face (official LongLM code):", p.hf_call),
        ("llama.cpp (llama-completion):", p.llama_cpp_command),
        (FREQLAB_BLOCK, f"{p.freqlab_apply}\n{p.freqlab_probe}"),
    ]
    lines = [f"{p.hf_call}; llama.cpp {p.llama_cpp_flags}"]
    return Display(f"SelfExtendPlan L = {p.L} → N = {p.N}", headline, lines, rows, code=code, details=p.reasoning)


def rope_display(p) -> Display:
    """RopeScalingPlan: one code block per transformers version range, the vLLM line, the critical dimension."""
    headline = f"L = {p.L} → N = {p.N}, factor {p.factor:g} (rope_theta {p.rope_theta:g}, d = {p.head_dim})"
    rows = [
        ("type", p.rope_type),
        ("window L → target N", f"{_window(p.L)} → {_window(p.N)}"),
        ("factor", f"{p.factor:g}"),
        ("rope_theta", f"{p.rope_theta:g}"),
        ("head dimension d (rotary d_r)", f"{p.head_dim} ({p.rotary_dim})"),
        (f"critical dimension at E = {p.effective_length or p.L} ({p.E_rule})", f"{p.critical_dim} of {p.rotary_dim}"),
        *_notes(p.notes),
    ]
    code = [(f"{b.label}:", json.dumps(b.config)) for b in p.blocks] + [("vLLM:", p.vllm_command)]
    return Display(
        f"RopeScalingPlan {p.rope_type}", headline, [json.dumps(p.config_4x)], rows, code=code, details=p.reasoning
    )


def upsample_display(p) -> Display:
    """UpsamplePlan: the extra tokens X, the ceiling (L - E)/L, the alternatives side by side and the verdict."""
    headline = (
        f"add {p.extra_tokens:,} tokens for f_T({p.E}) ≥ tau: then {percent(p.long_token_share, 2)} of tokens, "
        f"{percent(p.long_document_share, 2)} of documents in documents ≥ {p.E} tokens"
    )
    second = (
        f"now f_T({p.E}) = {p.current_occurrences:.4g} against tau = {human_count(p.tau)}; predicted effective "
        f"length {p.current_effective_length} (L = {p.L}, T = {human_count(p.tokens)}, added to {p.added_to})"
    )
    fixed = "-" if p.fixed_budget_share is None else percent(p.fixed_budget_share, 2)
    added = ", ".join(
        f"{g['documents']:,} documents of {g['shortest']:,}..{g['longest']:,} tokens ({g['source'] or 'corpus'})"
        for g in p.by_source()[:3]
    )
    rows = [
        ("effective length E to reach", str(p.E)),
        ("window L, regime", f"{_window(p.L)}, {p.regime}"),
        ("budget T, tau", f"{human_count(p.tokens)} tokens, {human_count(p.tau)}"),
        ("f_T(E) now", f"{p.current_occurrences:.4g}"),
        ("predicted effective length now", str(p.current_effective_length)),
        ("ceiling (L − E)/L per token", f"{p.ceiling:.4g}"),
        ("no mix reaches tau below", f"{p.lower_bound_tokens:,} tokens"),
        ("a = f(E)/f(0), b per added token", f"{p.per_token_corpus:.4g}, {p.per_token_long:.4g}"),
        ("extra tokens X", count(p.extra_tokens)),
        ("documents added", added or "none"),
        ("more corpus tokens", count(p.corpus_tokens_added)),
        (
            "documents ≥ E in the mix",
            f"{percent(p.long_token_share, 2)} of tokens, {percent(p.long_document_share, 2)} of documents",
        ),
        ("or, at the same budget, share turned into them", fixed),
        ("added to", p.added_to),
        ("verdict", p.verdict or "-"),
        *_notes(p.notes),
    ]
    header = ("to reach f_T(E) ≥ tau", "tokens", "extra", "training")
    table = (header, [
        (o.label, f"{o.total_tokens:,}", f"{o.extra_tokens:+,}", f"{100 * o.longer:+.1f}%") for o in p.options
    ])  # fmt: skip
    lines = [second, p.verdict] if p.verdict else [second]
    return Display(
        f"UpsamplePlan E = {p.E} (L = {p.L})", headline, lines, rows, table if p.options else None,
        details=p.reasoning,
    )  # fmt: skip


def harpe_display(p, python_list) -> Display:
    """HarpePlan: the bases, their range and stave score; the plot puts each head's base on the candidate range."""
    bases = sorted(float(b) for b in p.bases)
    headline = (
        f"{p.n_heads} heads, d = {p.head_dim}: bases {_base(bases[0])}..{_base(bases[-1])}; "
        f"shortest stave {p.score.shortest:.3f}, mean {p.score.mean:.3f}"
    )
    rows = [
        ("strategy", p.strategy),
        ("heads, head dimension d", f"{p.n_heads}, {p.head_dim}"),
        ("base range", f"{_base(p.b_min)}..{_base(p.b_max)}" + ("" if p.stride is None else f", stride {p.stride:,g}")),
        ("candidates", count(p.candidates)),
        ("distance grid m", p.grid.describe()),
        ("why this grid", p.grid_reason),
        ("shortest stave min_m max_h w", f"{p.score.shortest:.3f}"),
        ("mean_m max_h w", f"{p.score.mean:.3f}"),
    ]
    listing = python_list(p.bases)
    return Display(
        f"HarpePlan {p.strategy}", headline, [clip(listing, 200)], rows, code=[("bases (head order):", listing)],
        figure=_bases_svg(p.bases, p.b_min, p.b_max),
    )  # fmt: skip


def _base(b: float) -> str:
    return f"{b / 1e6:g}M" if b >= 1e6 else f"{b:,g}"


def _bases_svg(bases, b_min: float, b_max: float) -> str:
    heads = np.arange(len(bases))
    values = np.asarray(bases, dtype=np.float64)
    lo, hi = min(float(b_min), float(values.min())), max(float(b_max), float(values.max()))
    scale = 1e6 if hi >= 1e6 else 1.0
    chart = Chart(
        (lo, hi),
        (-1, len(bases)),
        x_ticks=nice_ticks(hi, lambda x: f"{x / scale:g}" + ("M" if scale > 1 else "")),
        y_ticks=[(0, "0"), (len(bases) - 1, str(len(bases) - 1))],
        x_title="RoPE base (M = 10^6)" if scale > 1 else "RoPE base",
        y_title="head",
    )
    chart.x_ticks = [t for t in chart.x_ticks if lo <= t[0] <= hi]
    return svg_chart(chart, [Series(values, heads, color=PALETTE[0], kind="dots")])


def usage_headline(u) -> str:
    """StringUsage: the positions RoPE and STRING use."""
    used = max(u.S, u.L - u.S + u.W)
    return f"RoPE uses positions 0..{u.L - 1}, STRING 0..{used - 1} (positions ≥ {u.L - u.S} dropped)"


def usage_rows(u) -> list[tuple[str, str]]:
    """StringUsage: the window, S and W, the pairs, the positions used, and (with a frequency) the mean trained f
    over the pairs before and after STRING.
    """
    used = max(u.S, u.L - u.S + u.W)
    rows = [
        ("window L", _window(u.L)),
        ("S, W", f"{u.S}, {u.W}"),
        ("query-key pairs", count(int(np.asarray(u.pairs_before).sum()))),
        ("positions used before / after", f"{u.L} / {used}"),
    ]
    if u.trained is not None:
        trained = np.asarray(u.trained, dtype=np.float64)
        for name, pairs in (("RoPE", u.pairs_before), ("STRING", u.pairs_after)):
            weights = np.asarray(pairs, dtype=np.float64)
            rows.append((f"mean trained f over pairs, {name}", human_count(float(weights @ trained / weights.sum()))))
    return rows


def usage_display(u) -> Display:
    """How a STRING usage shows in a notebook."""
    headline, rows = usage_headline(u), usage_rows(u)
    top = float(max(np.max(u.pairs_before), np.max(u.pairs_after)))
    chart = Chart(
        (0, u.L),
        (0, top * 1.15),
        x_ticks=[(k * u.L / 4, position_label(round(k * u.L / 4))) for k in range(5)],
        y_ticks=nice_ticks(top, lambda y: f"{y:,.0f}"),
        x_title="relative position p (K = 1024)",
        y_title="pairs using p",
        shades=[(u.L - u.S, u.L, TAIL_SHADE)],
    )
    positions = np.arange(u.L)
    figure = svg_chart(
        chart,
        [
            Series(positions, u.pairs_before, "RoPE", PALETTE[6]),
            Series(positions, u.pairs_after, "STRING", PALETTE[0]),
        ],
    )
    return Display(f"StringUsage L = {u.L}, S = {u.S}, W = {u.W}", headline, (), rows, figure=figure)
