"""The report of ``freqlab plan upsample``: the ceiling, the alternatives side by side, the documents, the verdict."""

from __future__ import annotations

from freqlab.frequency.regime_table import human_count
from freqlab.plan.upsample import UpsamplePlan


def _signed(n: int) -> str:
    return ("+" if n >= 0 else "-") + human_count(abs(n))


def upsample_report(p: UpsamplePlan) -> list[str]:
    """The lines printed for an upsampling plan (the same numbers as ``p.to_dict()``)."""
    lines = [
        f"Upsampling for E = {p.E} (L = {p.L}, regime {p.regime}, T = {p.tokens:,} tokens, tau = {human_count(p.tau)};"
        f" added to {p.added_to}):",
        f"  now f_T(E) = {human_count(p.current_occurrences)}: a = {p.per_token_corpus:.4g} per token, predicted "
        f"effective length {p.current_effective_length}",
        f"  no mix and no packing reaches tau with fewer than {human_count(p.lower_bound_tokens)} tokens in all: "
        f"a token adds at most (L-E)/L = {p.ceiling:.4g} occurrences of E"
        + (f", {p.ceiling / p.per_token_corpus:.2f}x a" if p.per_token_corpus else ""),
        "",
        f"  {'to reach f_T(E) >= tau':<62}  {'tokens':>8}  {'extra':>8}  {'training':>9}",
    ]
    for o in p.options:
        lines.append(
            f"  {o.way:<62}  {human_count(o.total_tokens):>8}  {_signed(o.extra_tokens):>8}  {o.longer:>+9.1%}"
        )
    groups = p.by_source()
    if groups:
        cap = f"up to {p.max_upweight:g}x its share of T" if p.max_upweight is not None else "without a cap"
        lines += ["", f"  documents to add (most occurrences of E per token first, each length {cap}):"]
        width = max(len(str(g["source"] or "-")) for g in groups)
        for g in groups:
            lengths = (
                f"{g['shortest']:,}..{g['longest']:,} tokens ({g['lengths']} length{'s' if g['lengths'] > 1 else ''})"
            )
            lines.append(
                f"    {g['source'] or '-':<{width}}  {g['documents']:>14,} documents  {human_count(g['tokens']):>7} "
                f"tokens  {lengths}"
            )
        ratio = f" ({p.per_token_long / p.per_token_corpus:.2f}x a)" if p.per_token_corpus else ""
        lines.append(f"    b = {p.per_token_long:.4g} occurrences of E per added token{ratio}")
    if p.corpus_tokens_added:
        lines.append(f"    and {p.corpus_tokens_added:,} more corpus tokens")
    lines += ["", p.verdict, "", p.reasoning]
    lines += [f"note: {note}" for note in p.notes]
    return lines
