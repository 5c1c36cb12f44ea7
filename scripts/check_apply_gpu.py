"""freqlab.apply on a CUDA GPU: STRING and Self-Extend in float32 and bfloat16 through the device's fused kernels,
against the same model in float64, and their cost against the stock model's forward.

The CPU tests (``tests/apply``) prove each backend exact in float64 against an independent reference; on a GPU
(``FREQLAB_TEST_DEVICE=cuda pytest tests/apply`` runs them there too) what is left to see is the rounding of half
precision and the speed. Three backends: ``sdpa`` (one ``scaled_dot_product_attention`` call on doubled keys),
``eager`` (explicit scores by blocks of queries), and ``flash`` (two flash calls merged by their log-sum-exp). No
flash-attn wheel exists for this GPU machine (PyPI ships only its source), so ``flash`` runs on PyTorch's own port of
flash-attention 2 (``torch.ops.aten._flash_attention_forward``: flash-attn's bottom-right causal mask, window and
float32 log-sum-exp), wrapped in ``flash_attn_func``'s signature; the wrapper is checked against explicit scores
first.

    python scripts/check_apply_gpu.py --out scripts/check_apply_gpu.md    # on a machine with a CUDA GPU

Error measure: ||logits - float64 logits|| / ||float64 logits|| over the whole sequence (Frobenius); the stock
model's own error in the same dtype and the method's own change of the logits (float64) are given beside it.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import transformers

import freqlab.apply as fa

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, LAYERS, VOCAB = 1024, 8, 2, 128, 2, 1000
L = 4096  # max_position_embeddings: STRING's S and W and Self-Extend's w_n are checked against it
STRING = (1536, 128)  # S, W: pairs at r >= 1536 use r - 1408 (within [L/3, L/2], as the planner picks)
SELF_EXTEND = (8, 1024)  # G, w_n
SLIDING = 2048  # Mistral's sliding window in the accuracy check (> S and w_n, so both methods act inside it)


def torch_flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                          softcap=0.0, return_attn_probs=False, **unused):  # fmt: skip
    """``flash_attn.flash_attn_func``'s signature on PyTorch's flash-attention 2 kernel: (B, T, H, d) tensors,
    causal aligned bottom-right, ``window_size=(left, right)``; with ``return_attn_probs`` (out, lse, None), lse
    (B, H, T) float32.
    """
    if softcap:
        raise NotImplementedError("PyTorch's flash kernel has no softcap")
    left, right = window_size
    out, lse, *_ = torch.ops.aten._flash_attention_forward(
        q, k, v, None, None, q.shape[1], k.shape[1], dropout_p, causal, False, scale=softmax_scale,
        window_size_left=None if left < 0 else left, window_size_right=None if right < 0 else right,
    )  # fmt: skip
    return (out, lse, None) if return_attn_probs else out


def explicit_attention(q, k, v, scale, left):
    """Float32 scores with flash-attn's masks: query i sees keys j with i + Tk - Tq - left <= j <= i + Tk - Tq."""
    tq, tk = q.shape[1], k.shape[1]
    group = q.shape[2] // k.shape[2]
    k, v = (x.float().repeat_interleave(group, dim=2) for x in (k, v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q.float(), k) * scale
    i = torch.arange(tq, device=q.device)[:, None] + tk - tq
    j = torch.arange(tk, device=q.device)[None, :]
    keep = (j <= i) & ((j >= i - left) if left >= 0 else True)
    scores = scores.masked_fill(~keep, float("-inf"))
    return torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v), torch.logsumexp(scores, -1)


def check_wrapper() -> list[str]:
    """The wrapper against explicit scores: bottom-right causal alignment, window, the log-sum-exp's layout."""
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = ["| Tq | Tk | window | max abs error, output | max abs error, lse |", "|---:|---:|---:|---:|---:|"]
    for tq, tk, left in [(512, 512, -1), (200, 700, -1), (700, 700, 100), (1, 900, 63)]:
        q = torch.randn(2, tq, HEADS, HEAD_DIM, device="cuda", dtype=torch.bfloat16, generator=g)
        k, v = (torch.randn(2, tk, KV_HEADS, HEAD_DIM, device="cuda", dtype=torch.bfloat16, generator=g) for _ in "kv")
        out, lse, _ = torch_flash_attn_func(q, k, v, softmax_scale=HEAD_DIM**-0.5, causal=True,
                                            window_size=(left, 0), return_attn_probs=True)  # fmt: skip
        want, want_lse = explicit_attention(q, k, v, HEAD_DIM**-0.5, left)
        e_out, e_lse = (out.float() - want).abs().max().item(), (lse - want_lse).abs().max().item()
        assert e_out < 0.02 and e_lse < 1e-3, (tq, tk, left, e_out, e_lse)
        rows.append(f"| {tq} | {tk} | {left if left >= 0 else 'none'} | {e_out:.1e} | {e_lse:.1e} |")
    return rows


def model(model_type: str, dtype: torch.dtype, seed: int = 0) -> torch.nn.Module:
    """A 2-layer model with transformers' random initialisation, the same weights for every dtype (made in float32,
    then cast). (Query and key projections drawn wider, for peaked attention, make the bfloat16 model chaotic: a
    quarter of its argmax tokens agree with float64 at T = 3072; so the check keeps the stock initialisation.)
    """
    extra = {"sliding_window": SLIDING} if model_type == "mistral" else {}
    config = transformers.AutoConfig.for_model(
        model_type, vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM, max_position_embeddings=L,
        attn_implementation="sdpa", **extra,
    )  # fmt: skip
    torch.manual_seed(seed)
    m = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return m.to(device="cuda", dtype=dtype).eval()


def apply(m, method: str, backend: str):
    options = {"backend": backend}
    if backend == "flash":
        options["flash_fn"] = torch_flash_attn_func
    return fa.string(m, *STRING, **options) if method == "string" else fa.self_extend(m, *SELF_EXTEND, **options)


@torch.no_grad()
def logits(m, ids) -> torch.Tensor:
    return m(ids).logits.double()


def relative(got: torch.Tensor, exact: torch.Tensor) -> float:
    """||got - exact|| / ||exact|| over all logits (Frobenius)."""
    return ((got - exact).norm() / exact.norm()).item()


def accuracy(length: int) -> list[str]:
    rows = ["| model | method | dtype | change by the method | stock error | sdpa | eager | flash (PyTorch's kernel) |"]
    rows.append("|---|---|---|---:|---:|---:|---:|---:|")
    ids = torch.randint(0, VOCAB, (1, length), device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    for model_type in ("llama", "qwen2", "mistral"):
        stock64 = logits(model(model_type, torch.float64), ids)
        for method in ("string", "self_extend"):
            exact = logits(apply(model(model_type, torch.float64), method, "sdpa"), ids)
            for dtype in (torch.float32, torch.bfloat16):
                stock = relative(logits(model(model_type, dtype), ids), stock64)
                cells = []
                for backend in ("sdpa", "eager", "flash"):
                    if backend == "flash" and dtype == torch.float32:
                        cells.append("-")  # flash kernels take fp16 and bf16 only
                        continue
                    cells.append(
                        f"{relative(logits(apply(model(model_type, dtype), method, backend), ids), exact):.1e}"
                    )
                name = str(dtype).removeprefix("torch.")
                change = relative(exact, stock64)
                rows.append(
                    f"| {model_type} | {method} | {name} | {change:.1e} | {stock:.1e} | " + " | ".join(cells) + " |"
                )
    return rows


def timed(m, ids, repeats: int) -> tuple[float, float]:
    """Median forward time (ms) and peak memory (GiB) over ``repeats`` runs after two warm-ups."""
    times = []
    with torch.no_grad():
        for k in range(repeats + 2):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            m(ids)
            torch.cuda.synchronize()
            if k >= 2:
                times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), torch.cuda.max_memory_allocated() / 2**30


def speed(lengths: list[int], repeats: int) -> list[str]:
    rows = [
        "| T | stock sdpa (ms) | STRING sdpa | STRING eager | STRING flash | Self-Extend sdpa | Self-Extend flash |"
    ]
    rows.append("|---:|---:|---:|---:|---:|---:|---:|")
    for length in lengths:
        ids = torch.randint(0, VOCAB, (1, length), device="cuda")
        base, base_mem = timed(model("llama", torch.bfloat16), ids, repeats)
        cells = [f"{base:.1f} ({base_mem:.1f} GiB)"]
        for method, backend in [("string", "sdpa"), ("string", "eager"), ("string", "flash"),
                                ("self_extend", "sdpa"), ("self_extend", "flash")]:  # fmt: skip
            ms, mem = timed(apply(model("llama", torch.bfloat16), method, backend), ids, repeats)
            cells.append(f"{ms:.1f} ({ms / base:.2f}x, {mem:.1f} GiB)")
        rows.append(f"| {length} | " + " | ".join(cells) + " |")
        torch.cuda.empty_cache()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="write the tables to this Markdown file")
    parser.add_argument("--length", type=int, default=3072, help="prompt length of the accuracy check (< L)")
    parser.add_argument("--speed-lengths", default="4096,16384,32768")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    name = torch.cuda.get_device_name()
    lines = [f"# freqlab.apply on {name} (torch {torch.__version__}, transformers {transformers.__version__})", ""]
    lines += ["## PyTorch's flash kernel as flash_attn_func, against explicit float32 scores (bf16 inputs)", ""]
    lines += [*check_wrapper(), ""]
    lines += [f"## Logits error against float64, T = {args.length}, relative (Frobenius)", ""]
    lines += [*accuracy(args.length), ""]
    lengths = [int(x) for x in args.speed_lengths.split(",")]
    lines += [f"## Forward time, Llama-shaped (2 layers, {HEADS} heads of {HEAD_DIM}, GQA {HEADS // KV_HEADS}), bf16, "
              f"batch 1, median of {args.repeats} (peak memory)", ""]  # fmt: skip
    lines += speed(lengths, args.repeats)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
