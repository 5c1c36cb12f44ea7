"""The context a model's positions are set up for, read from its config without torch: the window plans are checked
against (:func:`freqlab.apply.attention.model_window` on a loaded model, ``freqlab probe`` before loading it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def config_window(get: Callable[[str], Any]) -> int | None:
    """:func:`~freqlab.apply.attention.model_window` of a config read with ``get(name)`` (a loaded config's
    attribute, or a ``config.json`` dict's key: the probe checks plans before loading the model); None without a
    usable ``max_position_embeddings``.
    """
    L = get("max_position_embeddings")
    if not isinstance(L, int) or isinstance(L, bool) or L < 2:
        return None
    rope = get("rope_parameters") or get("rope_scaling") or {}
    if not isinstance(rope, dict):
        return L
    tables = [rope] if "factor" in rope or "rope_type" in rope else [t for t in rope.values() if isinstance(t, dict)]
    for table in tables:  # one table, or one per layer kind (Gemma 3)
        # a block that names no original window: transformers takes the config's own (Phi-3: a top-level key, else
        # max_position_embeddings) when it loads the model (a review: 512 here, 2048 loaded)
        original = table.get("original_max_position_embeddings") or get("original_max_position_embeddings") or L
        factor = table.get("factor")
        reads_original = table.get("rope_type", table.get("type")) in ("yarn", "llama3", "longrope")
        if reads_original and isinstance(factor, int | float) and isinstance(original, int) and factor > 1:
            L = max(L, int(original * factor))
    return L
