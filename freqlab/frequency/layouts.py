"""Attention layouts: which relative positions each kind of layer trains.

Models mix layer kinds. A **global** layer attends every earlier key of its segment (f as in
:mod:`freqlab.frequency.position`, STRING Eq. 2). A **sliding-window** layer of window w (Jiang et al. 2023,
"Mistral 7B", Sec. 2; interleaved with global layers in the Gemma 2 and Gemma 3 technical reports, Sec. 2;
gpt-oss) attends the w most recent keys, the query itself included: key k is visible from query q when
``0 <= q - k <= w - 1``. This is the convention of Hugging Face transformers'
``masking_utils.sliding_window_overlay`` (``kv_idx > q_idx - sliding_window``), which the Mistral, Gemma 2/3 and
gpt-oss models use (the tests check it against that function's own source); so

    f_swa(i) = f(i)  for i < w,    f_swa(i) = 0  for i >= w,

and a sliding-window layer's reach is capped at w - 1 by construction, whatever the data. A **chunked** layer
(Llama 4 ``attention_chunk_size`` C, transformers' ``chunked_overlay``: ``q_idx // C == kv_idx // C``) attends only
within chunks aligned to multiples of C in the row, beside the row's document mask: its segments are the pieces of
the regime's segments cut at those multiples, which needs each segment's offset in its row (under ``pack`` the
stream is walked again, :func:`freqlab.frequency.kernels.pack_walk_chunked`; in every other regime a segment starts
its row). A **NoPE** layer (Llama 4's ``no_rope_layers`` zeros) has no rotary embedding: it carries no position
frequency and is left out of every RoPE plan (STRING, Self-Extend, HARPE, scaling). ``partial_rotary_factor``
rotates part of each head only; the positions trained are the same, so it is reported and does not change f.

A layout is read from a model's ``config.json`` (:func:`layout_from_config`) or a short string
(:func:`parse_layout`): ``5*swa1024+global`` (Gemma 3), ``3*chunk8K+nope`` (Llama 4), ``global``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from freqlab.deprecation import renamed_method
from freqlab.display import Display, Displayed, percent, quantity
from freqlab.errors import FreqlabError, brief
from freqlab.frequency.kernels import pack_walk_chunked
from freqlab.frequency.position import refuse_megatron, segment_frequency
from freqlab.frequency.regime_table import frequency_key_numbers
from freqlab.frequency.regimes import Segments, _natural, check_histogram, check_window, segments, stream_order
from freqlab.frequency.stats import DEFAULT_TAU, position_at_mass, share_at_most
from freqlab.paths import expand_home
from freqlab.sizes import MAX_POSITIONS, parse_positions, position_label

KINDS: tuple[str, ...] = ("global", "swa", "chunk", "nope")
#: model types whose configs alternate sliding and global layers without saying so (transformers' defaults)
_SLIDING_PATTERN = {"gemma2": 2, "gpt_oss": 2, "gemma3": 6, "gemma3_text": 6, "cohere2": 4, "exaone4": 4, "olmo3": 4}
#: their config classes' window where a config leaves ``sliding_window`` out (null in the file stays no window)
_DEFAULT_WINDOW = {
    "mistral": 4096,
    "ministral": 4096,
    "gemma2": 4096,
    "gemma3": 4096,
    "gemma3_text": 4096,
    "gpt_oss": 128,
    "cohere2": 4096,
    "exaone4": 4096,
    "olmo3": 4096,
}
#: model types whose config classes slide, chunk and drop RoPE in no layer unless the file says so (checked against
#: transformers' classes in the tests): read from the file alone, without importing transformers (2-3 s, with torch)
_ALL_GLOBAL = frozenset({
    "llama", "mixtral", "phi", "phi3", "phimoe", "deepseek_v2", "deepseek_v3", "olmo", "olmo2", "olmoe", "gemma",
    "granite", "granitemoe", "starcoder2", "glm", "glm4", "gpt_neox", "gpt2", "falcon", "mpt", "bloom", "opt",
    "stablelm", "cohere", "dbrx", "nemotron", "exaone", "gptj", "codegen", "persimmon", "helium", "hunyuan_v1_dense",
    "ernie4_5", "seed_oss", "apertus", "arcee", "bitnet"
})  # fmt: skip
#: the keys a layout is read from, which transformers fills in for a model type freqlab's tables do not know
_LAYOUT_KEYS = ("layer_types", "sliding_window", "attention_chunk_size", "no_rope_layers", "partial_rotary_factor")
_LAYER_TYPES = {"full_attention": "global", "sliding_attention": "swa", "chunked_attention": "chunk"}
#: model types that slide only with use_sliding_window: true (transformers' default false), from max_window_layers on
#: (its default in transformers' config class)
_SLIDING_OPT_IN = {
    "qwen2": 28,
    "qwen3": 28,
    "qwen2_vl": 80,
    "qwen2_vl_text": 80,
    "qwen2_5_vl": 80,
    "qwen2_5_vl_text": 80,
}
#: ... and those whose opted-in sliding layers follow other rules (alternating, NoPE-dependent): not modelled
_SLIDING_UNMODELLED = frozenset({"qwen2_moe", "qwen3_moe", "smollm3", "qwen2_5_omni", "qwen2_5_omni_text"})


@dataclass(frozen=True, order=True)
class LayerKind:
    """One kind of attention layer: ``global``, ``swa`` (window ``size``), ``chunk`` (chunk ``size``) or ``nope``."""

    kind: str
    size: int = 0

    @property
    def name(self) -> str:
        """``global``, ``nope``, ``swa1K``, ``chunk8K`` (sizes with K = 1024)."""
        return f"{self.kind}{position_label(self.size)}" if self.size else self.kind

    @property
    def rope(self) -> bool:
        """Whether the layer has a rotary embedding (every kind but ``nope``)."""
        return self.kind != "nope"

    def reach(self, L: int) -> int:
        """Largest relative position the layer can attend in windows of L: w - 1 (sliding), C - 1 (chunked)."""
        return min(L, self.size) - 1 if self.size else L - 1


GLOBAL = LayerKind("global")


@dataclass(frozen=True)
class Layout:
    """Layer kinds in order (one per layer, or one period of a repeating pattern) and the rotated share of each head."""

    layers: tuple[LayerKind, ...]
    rotary_fraction: float = 1.0
    source: str = ""
    whole: bool = False  # one kind per layer of the model (a config's), not one period of a pattern

    @property
    def kinds(self) -> dict[LayerKind, int]:
        """Each kind with its number of layers, in order of first appearance."""
        out: dict[LayerKind, int] = {}
        for kind in self.layers:
            out[kind] = out.get(kind, 0) + 1
        return out

    @property
    def spec(self) -> str:
        """The layout as a short string: ``5*swa1K+global``."""
        runs: list[list] = []
        for kind in self.layers:
            if runs and runs[-1][0] == kind:
                runs[-1][1] += 1
            else:
                runs.append([kind, 1])
        return "+".join(kind.name if n == 1 else f"{n}*{kind.name}" for kind, n in runs)


_TERM = re.compile(r"^(?:(\d+)\s*\*\s*)?(global|nope|swa|chunk)\s*(\S*)$", re.IGNORECASE)


#: the most layers a layout string may hold (today's largest models have ~100-200)
MAX_LAYERS = 10_000


def _layers(n: int) -> str:
    """``  5 layers`` / ``  1 layer `` : the count right-aligned, the noun's width fixed (the report's column)."""
    return f"{n:>3} {quantity(n, 'layer').split(' ', 1)[1]:<6}"


def parse_layout(text: str) -> Layout:
    """A layout from a short string: terms ``[N*]KIND`` joined by ``+``; KIND is ``global``, ``nope``,
    ``swa<w>`` or ``chunk<C>`` (sizes as every window: ``1024``, ``4K``).

    Parameters
    ----------
    text : str
        The layout, e.g. ``5*swa1024+global``.

    Returns
    -------
    Layout
        The layer kinds and how many layers of each.

    Examples
    --------
    >>> parse_layout("5*swa1024+global").spec
    '5*swa1K+global'
    >>> [(k.name, n) for k, n in parse_layout("3*chunk8K+nope").kinds.items()]
    [('chunk8K', 3), ('nope', 1)]
    """
    layers: list[LayerKind] = []
    for term in str(text).split("+"):
        match = _TERM.match(term.strip())
        if not match:
            raise FreqlabError(
                f"layout {text!r}: cannot read {term.strip()!r} (terms are N*KIND, KIND one of "
                "global, nope, swa<window>, chunk<size>, e.g. 5*swa1024+global)"
            )
        repeat, kind, size = int(match.group(1) or 1), match.group(2).lower(), match.group(3)
        if not 1 <= repeat <= MAX_LAYERS or len(layers) + repeat > MAX_LAYERS:
            raise FreqlabError(
                f"layout {text!r}: {term.strip()!r} repeats a layer {repeat:,} times "
                f"(a layout holds 1..{MAX_LAYERS:,} layers)"
            )
        if kind in ("global", "nope"):
            if size:
                raise FreqlabError(f"layout {text!r}: {kind} takes no size, got {size!r}")
            layer = LayerKind(kind)
        else:
            if not size:
                raise FreqlabError(f"layout {text!r}: {kind} needs a size, e.g. {kind}1024 or {kind}8K")
            window = parse_positions(size, f"{kind} size in layout {text!r}")
            if not 1 <= window <= MAX_POSITIONS:
                raise FreqlabError(f"layout {text!r}: {kind} size {window:,} is not in 1..{MAX_POSITIONS:,} (2^30)")
            layer = LayerKind(kind, window)
        layers.extend([layer] * repeat)
    return Layout(tuple(layers), source=str(text))


def layout_from_config(config: dict, source: str = "config.json") -> Layout:
    """A layout from a model configuration's own keys (a Hugging Face ``config.json``; a multimodal one's
    ``text_config``).

    The keys read:

    * ``layer_types`` (``full_attention``, ``sliding_attention``, ``chunked_attention``), with ``sliding_window``
      and ``attention_chunk_size`` giving the sizes;
    * else ``sliding_window_pattern`` P (Gemma 3: every P-th layer global, ``(i + 1) % P == 0``);
      ``use_sliding_window`` / ``max_window_layers`` (Qwen2: layers from ``max_window_layers`` on slide, only when
      ``use_sliding_window``); ``no_rope_layers`` with ``attention_chunk_size`` (Llama 4: RoPE layers are chunked,
      the others global; as transformers fills them in, chunks of 8192 and every ``no_rope_layer_interval``-th (4th)
      layer NoPE where the file leaves them out or lists no layers, as the published Llama 4 configs do); Gemma 2
      and gpt-oss alternate (even layers slide), Gemma 3 every 6th layer is global; any other model with a
      ``sliding_window`` slides in every layer (Mistral); without one, every layer is global;
    * ``no_rope_layers`` (1: RoPE, 0: NoPE, as Llama 4 and transformers mean it) marks NoPE layers;
    * ``partial_rotary_factor`` is kept as the rotated share of each head.

    Keys a config leaves out take its config class's defaults: freqlab's own table for the model types above (and
    Mistral's window of 4096, Cohere 2's, EXAONE 4's and OLMo 3's 3:1 pattern, SmolLM3's every 4th layer NoPE); for
    any other type, when transformers is installed, the ``layer_types`` and window its config class fills in.

    Parameters
    ----------
    config : dict
        The model configuration (``config.json`` as a dict).
    source : str
        Its name, for error messages.

    Returns
    -------
    Layout
        The layer kinds and how many layers of each.

    Examples
    --------
    >>> layout_from_config({"model_type": "gemma3_text", "num_hidden_layers": 12, "sliding_window": 1024}).spec
    '5*swa1K+global+5*swa1K+global'
    """
    where = f"{source}"
    if not isinstance(config, dict):
        raise FreqlabError(f"{where}: a model config is a JSON object, got {type(config).__name__}")
    text_config = config.get("text_config")
    if text_config is not None and not isinstance(text_config, dict):  # a review: "abc" was passed over unsaid
        raise FreqlabError(f"{where}: text_config must be an object, got {brief(text_config)}")
    cfg = text_config if isinstance(text_config, dict) else config
    _check_config_types(cfg, where)
    model_type = str(cfg.get("model_type", config.get("model_type", "")))
    filled = "layer_types" not in cfg and _transformers_defaults(cfg, model_type)
    if filled:  # another model type: its keys as transformers' config class fills them in
        cfg, where = {**filled, **cfg}, f"{where} (layer_types as transformers fills them in)"
    n = cfg.get("num_hidden_layers")
    types = cfg.get("layer_types")
    no_rope = cfg.get("no_rope_layers")
    if n is None:
        n = len(types) if isinstance(types, list) else len(no_rope) if isinstance(no_rope, list) else None
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_LAYERS:  # as a layout string's
        raise FreqlabError(f"{where}: num_hidden_layers must be an integer in 1..{MAX_LAYERS:,}, got {brief(n)}")
    window = cfg.get("sliding_window")
    opted_in = cfg.get("use_sliding_window")
    opt_in = model_type in _SLIDING_OPT_IN or model_type in _SLIDING_UNMODELLED
    if opted_in is False or (opt_in and opted_in is not True):  # their use_sliding_window defaults to false
        window = None
    elif "sliding_window" not in cfg and (model_type in _SLIDING_OPT_IN or model_type in _DEFAULT_WINDOW):
        window = _DEFAULT_WINDOW.get(model_type, 4096)  # their config classes' default window (a review: Mistral's
        # 4096 was no window, 2*global)
    elif model_type in _SLIDING_UNMODELLED and opted_in is True and types is None:
        raise FreqlabError(
            f"{where}: {model_type} with use_sliding_window: true slides layers by a rule freqlab does not model; "
            "list layer_types in the config, or give the layout as a string (e.g. 12*global+12*swa4K)"
        )
    chunk = cfg.get("attention_chunk_size")
    if model_type in ("llama4", "llama4_text"):  # what transformers' Llama4TextConfig fills in for keys left out
        chunk = cfg.get("attention_chunk_size", 8192)
        if not no_rope:  # absent, or [] as the published Scout and Maverick configs have it: every 4th layer NoPE
            no_rope = _every_interval_nope(cfg, n, where)
    elif model_type == "smollm3" and no_rope is None:  # SmolLM3Config: the same rule, for an absent or null list
        no_rope = _every_interval_nope(cfg, n, where)
    if isinstance(no_rope, list) and no_rope and len(no_rope) < n:  # transformers indexes it by layer (a review:
        # [1, 1] for 4 layers made layers 2 and 3 RoPE layers, unsaid; a longer list, as a cut test config, loads)
        raise FreqlabError(f"{where}: no_rope_layers lists {len(no_rope)} layers, fewer than num_hidden_layers = {n}")
    if types is None:
        types = _default_layer_types(cfg, model_type, n, window, chunk, no_rope, where)
    if not isinstance(types, list) or len(types) < n:
        raise FreqlabError(f"{where}: layer_types must list the {n} layers, got {types!r}")
    layers = []
    for i, name in enumerate(types[:n]):
        if name not in _LAYER_TYPES:
            raise FreqlabError(f"{where}: layer_types[{i}] = {name!r} is not one of {', '.join(_LAYER_TYPES)}")
        kind = _LAYER_TYPES[name]
        size = {"swa": window, "chunk": chunk}.get(kind, 0)
        key = {"swa": "sliding_window", "chunk": "attention_chunk_size"}.get(kind)
        if key and (not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_POSITIONS):
            raise FreqlabError(f"{where}: layer {i} is {name} but {key} is {brief(size)} (sizes are 1..2^30)")
        if isinstance(no_rope, list) and i < len(no_rope) and not no_rope[i]:
            kind, size = "nope", 0
        layers.append(LayerKind(kind, cast(int, size)))  # swa and chunk sizes are checked just above
    rotary = cfg.get("partial_rotary_factor", 1.0)
    if isinstance(rotary, bool) or not isinstance(rotary, (int, float)) or not 0 < rotary <= 1:
        raise FreqlabError(f"{where}: partial_rotary_factor must be in (0, 1], got {rotary!r}")
    return Layout(tuple(layers), float(rotary), source, whole=True)


def _check_config_types(cfg: dict, where: str) -> None:
    """The keys whose type decides the layout, each of the type transformers reads (a review: ``"0101"`` as
    ``no_rope_layers`` and ``"yes"`` as ``use_sliding_window`` were read as absent or false, unsaid).
    """
    no_rope = cfg.get("no_rope_layers")
    if no_rope is not None and not (
        isinstance(no_rope, list) and all(isinstance(x, (bool, int)) and x in (0, 1) for x in no_rope)
    ):
        raise FreqlabError(f"{where}: no_rope_layers must be a list of 1 (RoPE) and 0 (NoPE), got {brief(no_rope)}")
    opted_in = cfg.get("use_sliding_window")
    if opted_in is not None and not isinstance(opted_in, bool):
        raise FreqlabError(f"{where}: use_sliding_window must be true or false, got {brief(opted_in)}")


def _default_layer_types(cfg, model_type, n, window, chunk, no_rope, where) -> list[str]:
    """transformers' default ``layer_types`` for a config that does not list them."""
    pattern = _count_key(cfg, "sliding_window_pattern", where, default=_SLIDING_PATTERN.get(model_type))
    if isinstance(no_rope, list) and chunk is not None:  # Llama 4: RoPE layers are chunked, NoPE layers global
        return ["chunked_attention" if no_rope[i] else "full_attention" for i in range(n)]
    if window is None:
        return ["full_attention"] * n
    if "max_window_layers" in cfg or model_type in _SLIDING_OPT_IN:  # Qwen2: layers from max_window_layers on slide
        if model_type in _SLIDING_OPT_IN and "max_window_layers" in cfg and cfg["max_window_layers"] is None:
            raise FreqlabError(f"{where}: max_window_layers must be an integer of at least 0, got None")
        default = _SLIDING_OPT_IN.get(model_type, n)  # absent: transformers' default; null (another type): none
        start = cast(int, _count_key(cfg, "max_window_layers", where, default=default, least=0))
        return ["sliding_attention" if i >= start else "full_attention" for i in range(n)]
    if pattern:
        return ["sliding_attention" if (i + 1) % int(pattern) else "full_attention" for i in range(n)]
    return ["sliding_attention"] * n  # Mistral: every layer slides


def _every_interval_nope(cfg: dict, n: int, where: str) -> list[int]:
    """``no_rope_layers`` as Llama 4's and SmolLM3's config classes fill it in: every ``no_rope_layer_interval``-th
    layer (default 4) NoPE (0), the others RoPE (1).
    """
    interval = cast(int, _count_key(cfg, "no_rope_layer_interval", where, default=4))  # int: a default
    return [int((i + 1) % interval != 0) for i in range(n)]


def _transformers_defaults(cfg: dict, model_type: str) -> dict:
    """The layout keys ``cfg`` leaves out as transformers' config class for ``model_type`` fills them in, for a model
    type freqlab's own tables do not know (a review: a Cohere 2, OLMo 3 or gpt-oss config without its window or
    pattern was read as every layer global); empty when transformers is not installed, does not know the type, or
    cannot build the config.
    """
    known = (*_SLIDING_PATTERN, *_SLIDING_OPT_IN, *_SLIDING_UNMODELLED, *_DEFAULT_WINDOW, *_ALL_GLOBAL)
    if not model_type or model_type in (*known, "llama4", "llama4_text"):
        return {}
    import logging as python_logging
    import warnings

    try:  # not installed, or failing to import (a version pinned against newer tokenizers): the file is read alone
        from transformers import CONFIG_MAPPING
        from transformers.utils import logging
    except Exception:
        return {}
    verbosity = logging.get_verbosity()
    try:
        config_class = CONFIG_MAPPING[model_type]
        # its notes (token ids, RoPE parameters, "Can't set head_dim" with the whole config) are not the layout's
        logging.set_verbosity(python_logging.CRITICAL)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            own = config_class(**{k: v for k, v in cfg.items() if k != "model_type"})
    except Exception:  # a type it does not know, or a config it cannot build: freqlab's reading of the file stands
        return {}
    finally:
        logging.set_verbosity(verbosity)
    out = {}
    for key in _LAYOUT_KEYS:
        try:
            value = getattr(own, key)
        except Exception:  # absent, or a per-layer attribute transformers will not give globally
            continue
        if key not in cfg and value is not None:
            out[key] = list(value) if isinstance(value, (list, tuple)) else value
    return out if "layer_types" in out or "sliding_window" in out else {}


def _count_key(cfg: dict, key: str, where: str, *, default: int | None = None, least: int = 1) -> int | None:
    """``cfg[key]`` as an integer of at least ``least`` (``default`` when absent or null), else an error naming it."""
    value = cfg.get(key)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise FreqlabError(f"{where}: {key} must be an integer of at least {least}, got {value!r}")
    return value


def read_layout(value: str | Path | dict | Layout) -> Layout:
    """A layout from a :class:`Layout`, a config dict, a ``config.json`` path, or a short string."""
    if isinstance(value, Layout):
        return value
    if isinstance(value, dict):  # not a file: its errors name what it is (a review: "config.json: ...")
        return layout_from_config(value, "a layout given as a model config mapping")
    text = str(value)
    if not text.strip():
        raise FreqlabError("an empty layout (give e.g. 5*swa1024+global or a config.json)")
    if text.endswith(".json") or Path(expand_home(text)).is_file():
        path = Path(expand_home(text))
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise FreqlabError(f"{path}: cannot read the model config ({exc.strerror})") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FreqlabError(f"{path}: not a JSON model config ({exc})") from None
        return layout_from_config(data, str(path))
    return parse_layout(text)


def kind_segments(
    kind: LayerKind, lengths: np.ndarray, counts: np.ndarray, L: int, regime: str, *, seed: int = 0,
    base: Segments | None = None,
) -> Segments:  # fmt: skip
    """The attention segments of one ``chunk`` layer kind; for any other kind the regime's own (``base``).

    Chunks are aligned to multiples of C within each row: a segment that starts its row is cut into pieces of C
    (``natural`` applied with window C); under ``pack`` the rows hold several documents at running offsets and
    the stream (the same seeded order as the regime's) is walked again with the cuts.
    """
    base = segments(lengths, counts, L, regime, seed=seed) if base is None else base
    if kind.kind != "chunk" or kind.size >= L:
        return base
    if regime == "megatron" or base.approximation:
        raise FreqlabError(
            "chunked attention needs each segment's offset in its row, which the megatron regime "
            "does not keep; use pack (with reset_attention_mask) or concat"
        )
    if regime == "pack":
        dense = pack_walk_chunked(stream_order(lengths, counts, seed), L, kind.size)
        nonzero = np.flatnonzero(dense)
        return Segments(nonzero.astype(np.int64), dense[nonzero], L, regime, base.dropped_tokens)
    pieces, number = _natural(base.lengths, base.counts, kind.size)
    return Segments(pieces, number, L, regime, base.dropped_tokens)


@dataclass(frozen=True)
class KindFrequency:
    """f of one layer kind (int64, shape (L,); ``None`` for NoPE layers, which carry no position frequency)."""

    kind: LayerKind
    layers: int
    f: np.ndarray | None

    def kind_row(self, *, share_of_layers: float, tokens: float | None = None, tau: float = DEFAULT_TAU) -> dict:
        """Name, layers, whether it has RoPE, its reach cap, and (RoPE layers) :func:`frequency_key_numbers`."""
        row: dict = {
            "kind": self.kind.name,
            "layers": self.layers,
            "share_of_layers": share_of_layers,
            "rope": self.kind.rope,
        }
        if self.f is None:
            row["note"] = "no rotary embedding: no position frequency; left out of RoPE plans"
            return row
        L = int(self.f.size)
        row["reach"] = self.kind.reach(L)
        if self.kind.kind == "swa" and self.kind.size < L:  # a window of L or more caps nothing (a review)
            row["note"] = f"sliding window of {self.kind.size} keys: reach capped at {row['reach']} by construction"
        elif self.kind.kind == "chunk" and self.kind.size < L:
            row["note"] = f"chunks of {self.kind.size} aligned in the row: reach capped at {self.kind.reach(L)}"
        return {**row, **frequency_key_numbers(self.f, tokens=tokens, tau=tau)}

    summary = renamed_method("summary", "kind_row")  # deprecated: the old name goes in 0.3


@dataclass(frozen=True, repr=False)
class LayoutFrequency(Displayed):
    """f per layer kind of a layout, for one window and regime; shows itself (repr, HTML) with each kind's layers,
    mass shares and reach.

    >>> layout_frequency([4096] * 10, [1] * 10, 2048, "5*swa512+global+nope")
    LayoutFrequency 5*swa512+global+nope, L = 2048, natural: swa512 x5 (reach 511), global x1 (reach 2047), nope x1
    swa512: 100.0% of mass at i ≤ 1024; global: 75.0% of mass at i ≤ 1024
    nope layers: no rotary embedding, no position frequency
    """

    layout: Layout
    L: int
    regime: str
    kinds: tuple[KindFrequency, ...]

    def __getitem__(self, name: str) -> KindFrequency:
        for kind in self.kinds:
            if kind.kind.name == name or (name == kind.kind.kind and kind.kind.size == 0):
                return kind
        raise KeyError(name)

    @property
    def full_attention(self) -> bool:
        """Whether a RoPE layer kind of the layout trains every relative position of the window (global, or a window
        or chunk of L or more): the data's f (``freqlab freq``'s regime rows) is then its f; otherwise no layer's.
        """
        return any(kind.f is not None and kind.kind.reach(self.L) == self.L - 1 for kind in self.kinds)

    def kind_rows(self, *, tokens: float | None = None, tau: float = DEFAULT_TAU) -> list[dict]:
        """One :meth:`KindFrequency.kind_row` per layer kind, with its share of the layers."""
        total = sum(kind.layers for kind in self.kinds)
        return [kind.kind_row(share_of_layers=kind.layers / total, tokens=tokens, tau=tau) for kind in self.kinds]

    summaries = renamed_method("summaries", "kind_rows")  # deprecated: the old name goes in 0.3

    def _display(self) -> Display:
        half = self.L // 2
        rope = [kind for kind in self.kinds if kind.f is not None]
        nope = [kind for kind in self.kinds if kind.f is None]
        headline = ", ".join(
            f"{k.kind.name} x{k.layers}" + (f" (reach {k.kind.reach(self.L)})" if k.f is not None else "")
            for k in self.kinds
        )
        shares = [(k.kind.name, share_at_most(cast(np.ndarray, k.f), half)) for k in rope]
        lines = ["; ".join(f"{name}: {percent(share)} of mass at i ≤ {half}" for name, share in shares)]
        if nope:
            lines.append(f"{', '.join(k.kind.name for k in nope)} layers: no rotary embedding, no position frequency")
        table = (
            ("kind", "layers", "reach", f"mass at i ≤ {half}", "50% of mass at i ≤"),
            [(k.kind.name, str(k.layers), "-" if k.f is None else str(k.kind.reach(self.L)),
              "-" if k.f is None else percent(share_at_most(k.f, half)),
              "-" if k.f is None else str(position_at_mass(k.f, 0.5))) for k in self.kinds],
        )  # fmt: skip
        title = f"LayoutFrequency {self.layout.spec}, L = {self.L}, {self.regime}"
        return Display(title, headline, lines, table=table)

    def report(self, *, tokens: float | None = None, tau: float = DEFAULT_TAU) -> str:
        """The terminal report of ``freqlab freq --layout`` (the numbers of :meth:`to_dict`): per layer kind its
        layers, mass shares and effective length (NoPE layers: a note).
        """
        data = self.to_dict(tokens=tokens, tau=tau)
        rotary = f" (rotary on {data['rotary_fraction']:.0%} of each head)" if data["rotary_fraction"] < 1 else ""
        lines = [f"layout {data['layout']} at L={data['L']}, {data['regime']}{rotary}"]
        if not data["full_attention"]:
            lines.append(f"  no RoPE layer attends the whole window: the L={data['L']} rows above are no layer's")
        for kind in data["kinds"]:
            if not kind["rope"]:
                lines.append(f"  {kind['kind']:<10} {_layers(kind['layers'])}  {kind['note']}")
                continue
            lines.append(
                f"  {kind['kind']:<10} {_layers(kind['layers'])}  "
                f"{percent(kind['share_at_most_half'])} of mass at i ≤ {kind['half']}, "
                f"{percent(kind['share_at_least_three_quarters'])} at i ≥ {kind['three_quarters']}; "
                f"effective length {kind.get('effective_length', '-')}"
                + (f"  ({kind['note']})" if "note" in kind else "")
            )
        return "\n".join(lines)

    def to_dict(self, *, tokens: float | None = None, tau: float = DEFAULT_TAU) -> dict:
        """The layout, window, regime and per layer kind :meth:`KindFrequency.summary`, as JSON."""
        layout = self.layout
        return {
            "layout": layout.spec,
            "source": layout.source,
            "rotary_fraction": layout.rotary_fraction,
            "L": self.L,
            "regime": self.regime,
            "full_attention": self.full_attention,
            "kinds": self.kind_rows(tokens=tokens, tau=tau),
        }


def truncate_to_window(f: np.ndarray, kind: LayerKind) -> np.ndarray:
    """f of a sliding-window (or chunk-capped) layer from a global f: positions at or beyond the reach are 0."""
    out = np.array(f, copy=True)  # int64, or Python integers (an exact numerator beyond 2^63)
    if kind.size:
        out[kind.size :] = 0
    return out


def layout_frequency(
    lengths: ArrayLike, counts: ArrayLike, L: int, layout, regime: str = "natural", *, seed: int = 0, megatron=None
) -> LayoutFrequency:
    """f(i) per layer kind of ``layout`` (a :class:`Layout`, config dict, ``config.json`` path or short string).

    Parameters
    ----------
    lengths, counts : array_like
        Document-length histogram: distinct lengths in tokens and their counts.
    L : int
        Training window L.
    layout : Layout, dict, str or Path
        The attention layout (a :class:`Layout`, config dict, ``config.json`` path or short string).
    regime : str
        Data regime (see ``REGIMES``).
    seed : int
        Seed of the shuffled document order, in the regimes that need one.
    megatron : MegatronOptions, optional
        The ``megatron`` regime's options naming its indexes (``data_path``): its windows replayed exactly (global,
        sliding-window and NoPE kinds; chunked layers need row offsets the replay does not keep). Without them that
        regime is refused: from a histogram alone it would be another's.

    Returns
    -------
    LayoutFrequency
        f(i) per layer kind (None for NoPE layers).

    Examples
    --------
    >>> lf = layout_frequency([6], [1], 6, "swa2+chunk4+global+nope")
    >>> [(k.kind.name, None if k.f is None else k.f.tolist()) for k in lf.kinds]
    [('swa2', [6, 5, 0, 0, 0, 0]), ('chunk4', [6, 4, 2, 1, 0, 0]), ('global', [6, 5, 4, 3, 2, 1]), ('nope', None)]
    """
    layout = read_layout(layout)
    L = check_window(L)
    lengths, counts = check_histogram(lengths, counts)
    base = segments(lengths, counts, L, regime, seed=seed, megatron=megatron)
    if regime == "megatron" and base.approximation:  # its per-kind rows carry no note that they would be concat's
        refuse_megatron(regime)
    f_global = segment_frequency(base)
    out = []
    for kind, layers in layout.kinds.items():
        if kind.kind == "nope":
            f = None
        elif kind.kind == "swa":
            f = truncate_to_window(f_global, kind)
        elif kind.kind == "chunk" and kind.size < L:
            f = segment_frequency(kind_segments(kind, lengths, counts, L, regime, seed=seed, base=base))
        else:
            f = f_global
        out.append(KindFrequency(kind, layers, f))
    return LayoutFrequency(layout, L, regime, tuple(out))
