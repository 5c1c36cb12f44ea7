"""Run a plan on a Hugging Face model: STRING and Self-Extend through transformers' attention interface.

``freqlab.apply.string(model, S, W)`` and ``freqlab.apply.self_extend(model, G, w_n)`` register an attention
function (``AttentionInterface.register``, with its mask function in ``AttentionMaskInterface``) and switch the
model to it with ``model.set_attn_implementation``; no module is replaced or patched, and
``freqlab.apply.remove(model)`` switches back. Both need the ``apply`` extra (torch, transformers); this package
imports torch only when one of them is called. The design and its exactness are explained in
:mod:`freqlab.apply.attention`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from freqlab.errors import FreqlabError

EXTRA_HINT = "pip install 'freqlab[apply]'"  # the one line shown when torch or transformers is missing

#: The model types :func:`string` and :func:`self_extend` are checked on against a reference (``tests/apply``): each
#: layer rotates its queries and keys with transformers' ``rotate_half`` RoPE right before attention.
TESTED_MODEL_TYPES = frozenset(
    {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "olmo2", "granite", "starcoder2", "phi3"}
)


#: Why some model types outside :data:`TESTED_MODEL_TYPES` give other logits than the papers' position matrices (read
#: in transformers' modeling code; Cohere, SmolLM3, Cohere 2, EXAONE 4 and Hunyuan measured against a reference).
UNTESTED_BECAUSE = {
    **dict.fromkeys(("cohere", "ernie4_5", "ernie4_5_moe"), "its RoPE is interleaved (adjacent dimensions paired)"),
    **dict.fromkeys(
        ("glm", "glm4"),
        "its RoPE is interleaved and, as usually configured, covers part of each head (a partial rotary: refused)",
    ),
    **dict.fromkeys(("smollm3", "cohere2", "exaone4"), "some of its layers have no RoPE"),
    **dict.fromkeys(("llama4", "llama4_text"), "some of its layers have no RoPE and others attend in chunks"),
    **dict.fromkeys(("hunyuan_v1_dense", "hunyuan_v1_moe"), "it normalises queries and keys after RoPE"),
    **dict.fromkeys(
        ("phi", "stablelm", "persimmon", "gpt_neox"),
        "its RoPE, as usually configured, covers part of each head (a partial rotary: refused)",
    ),
    **dict.fromkeys(
        ("deepseek_v2", "deepseek_v3", "minicpm3"), "its latent attention rotates a part of each head apart"
    ),
}


def check_model_type(model_type: str | None, allow_untested: bool = False, *, override: str = "") -> None:
    """A FreqlabError for a model type outside :data:`TESTED_MODEL_TYPES`, unless ``allow_untested`` (``override``:
    how the caller's user allows it, in the message).

    The plans re-rotate the queries and keys the attention function receives (:mod:`freqlab.apply.attention`),
    which is exact only for the layout above: interleaved RoPE (Cohere, ERNIE 4.5), layers without RoPE (SmolLM3,
    Cohere 2, EXAONE 4, Llama 4) or a norm after RoPE (Hunyuan) give other logits, and nothing in the model says so.

    Parameters
    ----------
    model_type : str or None
        The model's ``config.model_type`` (of its text config).
    allow_untested : bool
        Let any model type through.
    override : str
        How the caller's user allows an untested type (default: the API's and the CLI's ways), in the message.

    Examples
    --------
    >>> check_model_type("qwen2")
    >>> check_model_type("cohere")
    Traceback (most recent call last):
    ...
    freqlab.errors.FreqlabError: model type 'cohere' is not one freqlab.apply is tested on ...
    """
    if model_type in TESTED_MODEL_TYPES or allow_untested:
        return
    known = UNTESTED_BECAUSE.get(model_type)
    raise FreqlabError(
        f"model type {model_type!r} is not one freqlab.apply is tested on ({', '.join(sorted(TESTED_MODEL_TYPES))}): "
        "STRING and Self-Extend are exact only where every layer rotates all of its queries' and keys' dimensions "
        "with transformers' rotate_half RoPE right before attention"
        + (
            f", and {known}"
            if known
            else " (interleaved RoPE, layers without RoPE or a norm after RoPE give other "
            "logits; a partial rotary is refused when the plan is applied)"
        )
        + f"; {override or 'allow_untested=True (freqlab probe: --allow-untested)'} applies them anyway"
    )


def require(module: str = "torch") -> Any:
    """Import ``module`` (torch, transformers) or fail with one line naming the extra that provides it.

    Parameters
    ----------
    module : str
        Module name (``torch``, ``transformers``).

    Returns
    -------
    module
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise FreqlabError(f"{module} is not installed: {EXTRA_HINT}") from exc


def _attention():
    require("torch")
    require("transformers")
    return importlib.import_module("freqlab.apply.attention")


def string(
    model: Any,
    S: int,
    W: int,
    *,
    backend: str = "auto",
    flash_fn: Callable | None = None,
    flash_varlen_fn: Callable | None = None,
    allow_untested: bool = False,
) -> Any:
    """Apply STRING (An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, Sec. 4)
    to ``model`` in place and return it: a query-key pair at relative distance r = m - n >= S uses the position
    r - S + W (Eq. 4), pairs closer than S keep r. S and W are checked against L = max_position_embeddings.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A Hugging Face model with rotary position embeddings.
    S : int
        STRING's shift, 0 < S < L = max_position_embeddings.
    W : int
        STRING's local window, 0 <= W < S.
    backend : str
        ``sdpa`` (one fused torch call), ``eager`` (explicit scores) or ``flash`` (two flash-attention calls merged
        by their log-sum-exp, as STRING's own implementation; inference only; a padded batch through flash-attn's
        variable-length call); ``auto`` is ``flash`` when the model runs ``flash_attention_2``/``3`` and flash-attn
        imports, else ``sdpa``. All
        exact, see :mod:`freqlab.apply.attention`; the real flash kernel is untested here (no GPU in freqlab's
        tests).
    flash_fn : callable, optional
        Replaces flash-attn's ``flash_attn_func`` (same signature) in the ``flash`` backend.
    flash_varlen_fn : callable, optional
        Replaces ``flash_attn_varlen_func`` beside ``flash_fn`` (padded batches; without it they are refused).
    allow_untested : bool
        Apply it to a model type outside :data:`TESTED_MODEL_TYPES` (refused otherwise: :func:`check_model_type`),
        with a warning.

    Returns
    -------
    transformers.PreTrainedModel
        ``model`` itself, switched to the STRING attention function.

    References
    ----------
    .. [1] An et al., "Why Does the Effective Context Length of LLMs Fall Short?", ICLR 2025, arXiv:2410.18745.
    """
    return _attention().apply_string(model, S, W, backend, flash_fn, flash_varlen_fn, allow_untested)


def self_extend(
    model: Any,
    G: int,
    w_n: int,
    *,
    backend: str = "auto",
    flash_fn: Callable | None = None,
    flash_varlen_fn: Callable | None = None,
    allow_untested: bool = False,
) -> Any:
    """Apply Self-Extend (Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML
    2024, Sec. 3.2) to ``model`` in place and return it: pairs at r < w_n keep r, farther pairs use the grouped
    position m // G - n // G + w_n - w_n // G (Eq. 7's FLOOR operation, shifted so the two parts join: Alg. 1).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A Hugging Face model with rotary position embeddings.
    G : int
        Group size (the FLOOR divisor).
    w_n : int
        Neighbour window: pairs closer than w_n keep their position.
    backend : str
        As for :func:`string`.
    flash_fn, flash_varlen_fn : callable, optional
        As for :func:`string`.
    allow_untested : bool
        As for :func:`string`.

    Returns
    -------
    transformers.PreTrainedModel
        ``model`` itself, switched to the Self-Extend attention function.

    References
    ----------
    .. [1] Jin et al., "LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", ICML 2024,
           arXiv:2401.01325.
    """
    return _attention().apply_self_extend(model, G, w_n, backend, flash_fn, flash_varlen_fn, allow_untested)


def remove(model: Any) -> Any:
    """Undo :func:`string` / :func:`self_extend`: the model's previous attention implementation again.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A model :func:`string` or :func:`self_extend` was applied to.

    Returns
    -------
    transformers.PreTrainedModel
        ``model`` itself, with its previous attention implementation.
    """
    return _attention().remove(model)


__all__ = ["EXTRA_HINT", "TESTED_MODEL_TYPES", "check_model_type", "remove", "require", "self_extend", "string"]
