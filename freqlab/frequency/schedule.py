"""Multi-stage training schedules: frequencies of several stages add up.

A schedule is a small YAML (or JSON) file. Each stage trains ``tokens`` tokens with window ``L`` under a
regime, on a histogram file (paths relative to the schedule file) or, when omitted, on the schedule's
default ``histogram``. The frequency after all stages is

    F(i) = Σ_stages f_k(i) · T_k / f_k(0),      0 <= i < max_k L_k,

with f_k zero beyond its own window. This answers questions like the STRING paper's open one on Llama 3.1's
six-stage schedule: how much do short long-context stages add to the tail? Example::

    histogram: lengths.parquet     # default corpus for every stage
    tau: 100e9                     # optional threshold for the effective-length prediction
    stages:
      - {name: pretrain, L: 2048, tokens: 1T, regime: natural}
      - {name: long-8k, L: 8192, tokens: 20B, regime: pack, histogram: long.parquet}

Token counts accept plain numbers (``1e12``) or suffixes K, M, B (or G), T (decimal: B = 10^9); windows L accept
``8192`` or ``8K`` (K = 1024), as every size in freqlab (:mod:`freqlab.sizes`). ``weights`` (for the schedule, or per
stage) trains a stage on a weighted mix of its histogram's sources: ``SOURCE=W,...``, a mixture file (relative to the
schedule file) or a preset (:mod:`freqlab.frequency.mixture`).

A stage (and the schedule, as a default) states the rest of the recipe as it is run:

* ``layout``: the model's attention layout (:mod:`freqlab.frequency.layouts`: ``5*swa1024+global`` or a
  ``config.json``): f is computed per layer kind (a sliding-window layer's reach is capped at its window);
* ``curriculum``: a context-window curriculum inside the stage (sequence-length warm-up, SkyLadder, Dataset
  Decomposition), a mapping handed to :func:`freqlab.frequency.curricula.curriculum_from_spec`;
* ``position_ids``: position-id manipulation (PoSE, PI/YaRN stages on the original position scale), a mapping handed
  to :func:`freqlab.frequency.pose.position_ids_from_spec` (f may then reach beyond the stage's window);
* ``mixture``: the source mix the recipe states (documentation: the source names are the paper's); ``weights``
  applies a mix to the histogram's own sources;
* any number may be written ``{value: 8K, source: "paper, Sec. 3.4.2"}`` or ``{value: 8K, assumed: "why"}``:
  the source of each number, or the mark that its source does not state it (kept in ``Stage.provenance``).

The report (:meth:`ScheduleFrequency.reach_table`) names, per stage and per layer kind, the share of all training
tokens that reached relative positions at or beyond each earlier stage's window.
"""

from __future__ import annotations

import contextlib
import datetime
import difflib
import functools
import math
import os
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path

import numpy as np

from freqlab.config_file import read_config_file
from freqlab.display import Display, Displayed
from freqlab.errors import FreqlabError, ParameterError, brief
from freqlab.frequency.curricula import curriculum_from_spec
from freqlab.frequency.exact import as_floats
from freqlab.frequency.layouts import (
    GLOBAL,
    MAX_LAYERS,
    LayerKind,
    Layout,
    layout_frequency,
    read_layout,
    truncate_to_window,
)
from freqlab.frequency.pose import POSE_ROWS, SCALED_DISTANCES, Scaled, position_ids_from_spec
from freqlab.frequency.position import position_frequency
from freqlab.frequency.regimes import REGIMES, expands_documents
from freqlab.frequency.stats import (
    DEFAULT_TAU,
    effective_length,
    exact_tau,
    largest_reaching,
    share_at_least,
    share_at_most,
)
from freqlab.paths import expand_home
from freqlab.resources import require_memory
from freqlab.sizes import MAX_POSITIONS, counts_told_apart, json_threshold, parse_positions, parse_tokens


@dataclass(frozen=True)
class Stage:
    """One training stage: ``tokens`` tokens in windows of ``L`` under ``regime`` on ``histogram``."""

    name: str
    L: int
    tokens: int
    regime: str = "natural"
    histogram: Path | None = None
    weights: str | None = None  # source weights of the stage's mix (None: the histogram as scanned)
    layout: Layout | None = None  # attention layout (None: every layer global)
    curriculum: dict | None = None  # spec for freqlab.frequency.curricula.curriculum_from_spec
    position_ids: dict | None = None  # spec for freqlab.frequency.pose.position_ids_from_spec
    mixture: dict | None = None  # the source mix the recipe states (documentation)
    provenance: tuple = ()  # (key, "source: ..." | "assumed: ...") for the numbers of the stage
    note: str = ""
    weights_from: str = ""  # where ``weights`` was given, for its errors ("": the stage)
    histogram_from: str = ""  # where ``histogram`` was given when not by the stage ("--hist", the file's default)

    @property
    def assumed(self) -> tuple[str, ...]:
        """The keys whose numbers the recipe's sources do not state."""
        return tuple(key for key, text in self.provenance if text.startswith("assumed"))


def regime_replaced(curriculum: dict | None, position_ids: dict | None) -> str | None:
    """Why a stage's ``regime`` is not used (its rows are made otherwise), or None where it is.

    PoSE trains one row per document, its first min(n, L) tokens; Dataset Decomposition cuts each document into its
    pieces of 2^k + 1 tokens, 2^k inputs (:mod:`freqlab.frequency.curricula`).
    """
    if (position_ids or {}).get("kind") == "pose":
        return "a PoSE stage trains one row per document, its first min(n, L) tokens"
    if (curriculum or {}).get("kind") == "dataset-decomposition":
        return "a Dataset Decomposition stage trains each document's pieces of 2^k + 1 tokens (2^k inputs)"
    return None


@dataclass(frozen=True)
class Schedule:
    """A multi-stage training schedule, as read by :func:`load_schedule` (the file format is the module's).

    Its frequency is F(i) = Σ_stages f_k(i) · T_k / f_k(0) (:func:`schedule_frequency`); ``tau`` is the
    threshold of its effective-length prediction, ``sources`` and ``provenance`` say where its numbers come from.
    """

    stages: tuple[Stage, ...]
    histogram: Path | None = None
    tau: float = DEFAULT_TAU
    source: str = "<schedule>"
    title: str = ""
    sources: tuple[str, ...] = ()  # the publications the recipe's numbers come from
    notes: tuple[str, ...] = ()
    provenance: tuple = ()  # (key, "source: ..." | "assumed: ...") for the schedule's own numbers (layout, tau)
    layout: Layout | None = None  # the file's default layout, which the stages that name none have
    layout_replaced: bool = False  # by with_layout: the notes are marked once, for the layout they were written for

    def with_layout(self, layout: str | Layout) -> Schedule:
        """The schedule with ``layout`` (a spec, a config.json or a :class:`Layout`) given to every stage that
        names none, instead of the file's default layout.
        """
        parsed = read_layout(layout)
        default = [stage.layout is None or stage.layout is self.layout for stage in self.stages]
        if not any(default):  # it would change nothing, unsaid
            raise ParameterError(
                f"{self.source}: every stage names its layout, so a layout given for the stages that name none changes "
                "nothing; edit the stages' layouts instead",
                "--layout",
            )
        stages = tuple(replace(s, layout=parsed) if d else s for s, d in zip(self.stages, default, strict=True))
        provenance = tuple(item for item in self.provenance if item[0] != "layout")  # the file's layout's source
        instead = " instead" if self.layout is not None else ""  # the title may name the file's layout
        title = f"{self.title} (layout {parsed.spec} given{instead})" if self.title else ""
        notes = self.notes  # a review: gemma3's "sliding-window layers reach at most 1023" under --layout global
        if self.layout is not None and parsed.spec != self.layout.spec and not self.layout_replaced:
            notes = tuple(f"{note} [written for the layout {self.layout.spec}]" for note in notes)
        replaced = self.layout_replaced or parsed.spec != getattr(self.layout, "spec", None)
        return replace(
            self,
            stages=stages,
            layout=parsed,
            provenance=provenance,
            title=title,
            notes=notes,
            layout_replaced=replaced,
        )


STAGE_KEYS = frozenset(
    {"name", "L", "tokens", "regime", "histogram", "weights", "layout", "curriculum", "position_ids", "mixture", "note"}
)
SCHEDULE_KEYS = frozenset({"stages", "histogram", "tau", "weights", "layout", "title", "sources", "notes", "name"})


def load_schedule(
    path: str | os.PathLike, *, histogram: str | Path | None = None, weights: str | None = None
) -> Schedule:
    """Read and validate a schedule file; ``histogram`` and ``weights`` override its default corpus and mix.

    Parameters
    ----------
    path : str or Path
        The schedule file (YAML or JSON).
    histogram : str or Path, optional
        Corpus of the stages that name none, instead of the file's default (an error where every stage names one).
    weights : str, optional
        Source weights of the stages that name none, instead of the file's default (an error where every stage
        names its own).

    Returns
    -------
    Schedule
        The validated schedule; a bad file raises FreqlabError naming the file and key.
    """
    path = Path(path)
    data = read_config_file(path, "schedule")
    return parse_schedule(data, base=path.parent, source=str(path), histogram=histogram, weights=weights)


#: the most stages a schedule holds: its report gives F after each stage (a review's 5,000 stages ran for more than 13
#: minutes; 1,000 of L = 256 now take ~1 s, 200 of L = 1M ~12 s, memory checked; a real schedule has a handful)
MAX_STAGES = 1000


def parse_schedule(
    data, *, base: Path = Path("."), source: str = "<schedule>", histogram=None, weights: str | None = None
) -> Schedule:
    """Validate a schedule given as a dict (see the module docstring for the format)."""
    if not isinstance(data, dict) or not isinstance(data.get("stages"), list) or not data["stages"]:
        raise FreqlabError(f"{source}: a schedule needs a non-empty list 'stages'")
    if len(data["stages"]) > MAX_STAGES:
        raise FreqlabError(
            f"{source}: {len(data['stages']):,} stages, more than {MAX_STAGES:,}: merge the stages of the same "
            "settings (their F is that of one stage of their tokens' sum)"
        )
    _refuse_unknown(set(data) - SCHEDULE_KEYS, SCHEDULE_KEYS, source)
    data, top_provenance = _annotations(data, source)
    if histogram is not None and not hasattr(histogram, "lengths"):  # a path (else a LengthHistogram, used as is)
        histogram = Path(histogram)
    default = histogram if histogram is not None else _relative(base, data.get("histogram"))
    histogram_from = "--hist" if histogram is not None else f"{source}: histogram"
    # weights given here (--weights, or Python) are read from the working folder, as --weights reads them, and are
    # checked as the file's are (a mapping was a TypeError later, "" no weights, unsaid: a review)
    given = None if weights is None else _weights(Path("."), weights, "weights", relative=False)
    default_weights = given if weights is not None else _weights(base, data.get("weights"), f"{source}: weights")
    default_from = "--weights" if weights is not None else f"{source}: weights"
    default_layout = _layout(base, data.get("layout"), source)
    stages: list[Stage] = []
    for number, raw in enumerate(data["stages"], start=1):
        where = f"{source}: stage {number}"
        if not isinstance(raw, dict):
            raise FreqlabError(f"{where}: expected a mapping, got {brief(raw)}")
        named = f" ({raw['name']})" if isinstance(raw.get("name"), str) else ""  # as the errors after this name it
        _refuse_unknown(set(raw) - STAGE_KEYS, STAGE_KEYS, where + named)
        raw, provenance = _annotations(raw, where)
        name = _text(raw.get("name", f"stage-{number}"), f"{where}: name")
        if not name.strip():  # the report's stage column, the reach table: a stage is told by its name
            raise FreqlabError(f"{where}: name is empty")
        if any(stage.name == name for stage in stages):  # the report and the reach table tell stages by name
            own = "name" if "name" in raw else "default name (give it a name)"
            raise FreqlabError(f"{where}: its {own} {name!r} is the name of an earlier stage too")
        where = f"{source}: stage {number} ({name})"
        if "L" not in raw:  # as a missing 'tokens' (a review: "L must be a positive integer ..., got None")
            raise FreqlabError(f"{where}: missing 'L' (its window, e.g. 2048 or 2K)")
        try:
            L = parse_positions(raw["L"])
        except FreqlabError as exc:  # its own words: the suffixes of positions (K = 1024; no G), a float, a sign
            if raw["L"] is None:
                raise FreqlabError(f"{where}: L must be a positive integer (e.g. 2048 or 2K), got None") from None
            raise FreqlabError(f"{where}: L: {exc}") from None
        if L > MAX_POSITIONS:  # f is a dense array (a review: L: 1e400 was a traceback), as --L
            raise FreqlabError(f"{where}: L = {brief(raw.get('L'))} is larger than freqlab supports (2^30)")
        if "tokens" not in raw:
            raise FreqlabError(f"{where}: missing 'tokens'")
        try:
            tokens = parse_tokens(raw["tokens"])
        except FreqlabError as exc:
            raise FreqlabError(f"{where}: {exc}") from None
        if tokens >= 1 << 63:  # counts stay exact int64, as --tokens (tokens: 1e400 was a traceback)
            raise FreqlabError(f"{where}: tokens = {brief(raw['tokens'])} is past 2^63 - 1, the most freqlab counts")
        regime = raw.get("regime", "natural")
        if regime not in REGIMES:
            raise FreqlabError(f"{where}: unknown regime {brief(regime)}; choose one of {', '.join(REGIMES)}")
        stage_histogram = _relative(base, raw.get("histogram")) or default
        if stage_histogram is None:
            raise FreqlabError(f"{where}: no histogram (give one for the stage or a default 'histogram')")
        stage_weights = _weights(base, raw.get("weights"), f"{where}: weights")
        layout = _layout(base, raw.get("layout"), where) or default_layout
        specs = {key: raw.get(key) for key in ("curriculum", "position_ids", "mixture")}
        for key, spec in specs.items():
            if spec is not None and not isinstance(spec, dict):
                raise FreqlabError(f"{where}: {key} must be a mapping, got {spec!r}")
        replaced = regime_replaced(specs["curriculum"], specs["position_ids"])
        if "regime" in raw and replaced:  # the report showed it, unused (reviews: PoSE, then Dataset Decomposition)
            raise FreqlabError(f"{where}: {replaced}: its regime ({brief(regime)}) would not be used; leave it out")
        stages.append(
            Stage(name, L, tokens, regime, stage_histogram, stage_weights or default_weights, layout,
                  specs["curriculum"], specs["position_ids"], specs["mixture"], provenance,
                  _text(raw.get("note", ""), f"{where}: note"),
                  f"{where}: weights" if stage_weights else default_from,
                  "" if raw.get("histogram") is not None else histogram_from)
        )  # fmt: skip
    # a histogram or weights given here are the default of the stages that name none (as a layout given to
    # with_layout): where every stage names its own they would change nothing, unsaid (a review: --hist naming no
    # file at all ran without a word)
    for value, key, option in ((histogram, "histogram", "--hist"), (weights, "weights", "--weights")):
        if value is not None and all(raw.get(key) is not None for raw in data["stages"]):
            raise ParameterError(
                f"{source}: every stage names its {key}, so {option} (the {key} of the stages that name none) changes "
                f"nothing; edit the stages' {key} instead",
                option,
            )
    given = data.get("tau", DEFAULT_TAU)
    try:
        tau = parse_tokens(given)  # an int: exact past 2^53, as --tau's
        if tau >= 1 << 63:
            raise FreqlabError("past int64")
    except FreqlabError:
        raise FreqlabError(
            f"{source}: tau must be a positive number of occurrences, a whole number from 1 to 2^63 - 1 (e.g. 100B), "
            f"got {brief(given)}"
        ) from None
    listed = {key: _texts(data.get(key), f"{source}: {key}") for key in ("sources", "notes")}
    title = _text(data.get("title") or data.get("name") or "", f"{source}: title")
    return Schedule(
        tuple(stages), default, tau, source, title, listed["sources"], listed["notes"], top_provenance, default_layout
    )


def _text(value, where: str) -> str:
    """A name, title or note: a string, or a number or date written as one (``name: 2024``, ``name: 2024-01-01``,
    which YAML reads as a date); else an error naming it.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float | datetime.date):
        raise FreqlabError(f"{where} must be text, got {brief(value)}")
    if isinstance(value, float):  # `1.10` is read as 1.1, `1e3` as 1000.0: the text written is gone (a review)
        raise FreqlabError(f"{where} is the number {value!r} as read: quote it to keep the text written")
    return str(value)


def _texts(value, where: str) -> tuple[str, ...]:
    """``sources`` or ``notes``: one text or a list of them (none: empty)."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    return tuple(_text(item, f"{where}[{k}]" if isinstance(value, list) else where) for k, item in enumerate(items))


def _refuse_unknown(unknown: AbstractSet[str], known: AbstractSet[str], where: str) -> None:
    """A FreqlabError naming the keys a schedule does not know, each with the known key it nearly spells."""
    if unknown:
        close = {key: difflib.get_close_matches(str(key), known, 1, 0.7) for key in unknown}
        keys = sorted(f"{key}" + (f" (did you mean {close[key][0]}?)" if close[key] else "") for key in unknown)
        raise FreqlabError(f"{where}: unknown key(s) {', '.join(keys)}")


PROVENANCE = {"source", "assumed"}  # what a {value: X, ...} number says of itself


def _annotations(raw: dict, where: str, prefix: str = "") -> tuple[dict, tuple]:
    """A mapping with every ``{value: X, source: ...}`` / ``{value: X, assumed: ...}`` number replaced by X, and the
    (key, "source: ..." | "assumed: ...") pairs; nested specs (``curriculum: {start: {value: 32, ...}}``) too, their
    keys written ``curriculum.start``.
    """
    plain, provenance = {}, []
    for key, value in raw.items():
        name = f"{prefix}{key}"
        others = set(value) - {"value"} if isinstance(value, dict) and "value" in value else set()
        # {value: 8K, sorce: paper} is a provenance mistyped (a review: read as a length, "not a length"); a text,
        # where weights {value: 2, sources: 1} are numbers of sources that happen to be so named
        mistyped = {
            k: close[0]
            for k in others
            if isinstance(value[k], str) and (close := difflib.get_close_matches(str(k), PROVENANCE, 1, 0.7))
        }
        typo = key != "weights" and set(mistyped) == others  # weights name sources: "sources" may be one
        if isinstance(value, dict) and "value" in value and (PROVENANCE & others or typo):
            # a number and its provenance ({value: 512} alone said to need one; a source named "value" in
            # weights: {value: 2, web: 1} stays a source)
            extra = set(value) - {"value", "source", "assumed"}
            if extra or ("source" in value) == ("assumed" in value):  # {value: 512} alone, a typo (sourc): said so
                keys = (f"{k!r}" + (f", did you mean {mistyped[k]!r}?" if k in mistyped else "") for k in extra)
                what = f" (unknown key(s) {'; '.join(sorted(keys))})" if extra else ""
                raise FreqlabError(
                    f"{where}: {name} takes {{value, source}} or {{value, assumed}}, got {value!r}{what}"
                )
            kind = "source" if "source" in value else "assumed"
            provenance.append((name, f"{kind}: {value[kind]}"))
            value = value["value"]
        elif isinstance(value, dict) and key != "stages":
            value, inner = _annotations(value, where, f"{name}.")
            provenance.extend(inner)
        plain[key] = value
    return plain, tuple(provenance)


def _layout(base: Path, value, where: str) -> Layout | None:
    """A stage's layout: a short string, or a model ``config.json`` relative to the schedule file."""
    if value is None:
        return None
    try:
        if isinstance(value, dict):  # a review: its errors named no file nor stage
            return read_layout(value)
        if not str(value).strip():  # not a path relative to the schedule file: read_layout's own words
            return read_layout(str(value))
        candidate = _relative(base, value)
        return read_layout(str(candidate) if candidate is not None and candidate.is_file() else str(value))
    except FreqlabError as exc:
        raise FreqlabError(f"{where}: {exc}") from None


PRESETS_FILE = Path(__file__).resolve().parents[1] / "data" / "recipes.yaml"


def recipe_presets() -> dict:
    """The published recipes shipped with freqlab (``freqlab/data/recipes.yaml``): name -> schedule mapping."""
    return read_config_file(PRESETS_FILE, "recipe presets")


def load_preset(name: str, *, histogram=None, weights: str | None = None) -> Schedule:
    """A published recipe as a :class:`Schedule` on ``histogram`` (a path or a LengthHistogram).

    Parameters
    ----------
    name : str
        A preset of ``freqlab/data/recipes.yaml`` (``llama3``, ...).
    histogram : str, Path or LengthHistogram
        The corpus every stage trains on.
    weights : str, optional
        Source weights of every stage.

    Returns
    -------
    Schedule
        The recipe, with its sources and what it assumes.

    Examples
    --------
    >>> from freqlab.sizes import position_label
    >>> schedule = load_preset("llama3", histogram="lengths.parquet")
    >>> [position_label(s.L) for s in schedule.stages], schedule.stages[1].assumed
    (['8K', '16K', '32K', '48K', '64K', '96K', '128K'], ('L', 'tokens'))
    """
    presets = recipe_presets()
    if name not in presets:
        raise ParameterError(f"unknown recipe preset {name!r}; choose one of {', '.join(presets)}", "--preset")
    if histogram is None:  # a review met "stage 1 (...): no histogram (give one for the stage ...)"
        raise FreqlabError(
            f"preset {name}: a preset names no corpus: give histogram= (a lengths.parquet or a LengthHistogram; "
            f"`freqlab schedule --preset {name}` scans the built-in corpus for it)"
        )
    return parse_schedule(presets[name], source=f"preset {name}", histogram=histogram, weights=weights)


def files_named(schedule: Schedule) -> list[str]:
    """The files a schedule names, which a command reading it reads too: its stages' histograms, mixture files and
    model configs (a review: ``plan string --schedule s.yaml --usage-out /dev/stdout >> mix.yaml`` appended to the
    weights file the schedule names).
    """
    names = set()
    for stage in schedule.stages:
        layout_source = getattr(stage.layout, "source", None)
        for value in (stage.histogram, stage.weights, layout_source):
            if isinstance(value, str | Path) and Path(value).is_file():
                names.add(str(value))
    return sorted(names)


def _weights(base: Path, value, where: str, *, relative: bool = True) -> str | None:
    """The weights given at ``where`` (a stage, the file's default) as text: ``SOURCE=W,...``, a preset, or a mixture
    file (relative to the schedule file).
    """
    from freqlab.frequency.mixture import PRESETS  # here: mixture imports polars, which schedules need not

    presets = ", ".join(PRESETS)
    kinds = f"weights are SOURCE=W,..., a mapping of sources to weights, a mixture file or a preset ({presets})"
    if value is None:
        return None
    # {} and "" named no weights: {} was taken for none, unsaid, and "" for the working folder; a list, a number or
    # an array is none either (reviews)
    if isinstance(value, os.PathLike):  # a mixture file's path from Python
        value = os.fspath(value)
    if not isinstance(value, Mapping | str):
        raise FreqlabError(f"{where}: {brief(value)} is not weights; {kinds}; or leave it out")
    if not value or (isinstance(value, str) and not value.strip()):
        raise FreqlabError(f"{where}: {brief(value)} names no weights; {kinds}; or leave it out")
    if isinstance(value, Mapping):  # a numpy float as numpy writes it (float32's 0.3, not 0.30000001192092896)
        return ",".join(f"{source}={str(w) if isinstance(w, np.floating) else w}" for source, w in value.items())
    text = value
    if not relative:  # as the command line gives it: a preset, SOURCE=W,..., or a file from the working folder
        return text
    if text.strip() in PRESETS:  # a preset first, as --weights takes it
        return text
    candidate = _relative(base, text)
    if candidate is not None and candidate.is_file():  # next to the schedule, never the working folder's
        return str(candidate)
    if "=" in text:
        return text
    raise FreqlabError(
        f"{where}: {candidate}: no such mixture file (a weights file is relative to its schedule); {kinds}"
    )


def mix_bound(stage: Stage) -> tuple[int | bool, int | None]:
    """How a float64 source mix of the stage is bounded where its f walks the histogram one item at a time
    (``weighted_histogram``'s ``stream`` and ``window``): the documents of its regime or of a replay, or the rows
    of L of a curriculum under pack or natural; (False, None): not at all (a review: a warm-up under natural with
    weights a=70%,b=30% was refused for walking 2.3·10^10 rows, then one of long documents for 8.6·10^9 rows).
    """
    spec, build = (stage.curriculum, curriculum_from_spec) if stage.curriculum is not None else (
        stage.position_ids, position_ids_from_spec)  # fmt: skip
    if spec is not None:
        with contextlib.suppress(FreqlabError):  # a bad spec: the stage's frequency says so, naming the stage
            method = build(spec)
            bound = method.mix_documents(stage.regime)
            if bound:
                return bound, stage.L if method.walks_rows else None
    return expands_documents(stage.regime), None


def stage_histogram(stage: Stage, cache: dict | None = None, *, where: str = ""):
    """The LengthHistogram a stage trains on: its file, weighted by the stage's ``weights`` (read once per
    file and weights when ``cache`` is shared); ``where`` names the stage in the file's errors (a missing file).
    """
    # imported here, not at module level: both import polars, which `import freqlab.frequency` does not need
    from freqlab.frequency.mixture import Mixture, weighted_histogram
    from freqlab.histogram import LengthHistogram

    cache = {} if cache is None else cache
    key = (stage.histogram, stage.weights, *mix_bound(stage))
    if key not in cache:
        # Stage.histogram is a path (None fails in read_parquet, as before) or, through the API, a LengthHistogram
        source, read = stage.histogram, LengthHistogram.read_parquet
        try:
            h = source if isinstance(source, LengthHistogram) else read(source)  # type: ignore[arg-type]
        except FreqlabError as exc:  # "nope.parquet: no such histogram file" named no schedule nor stage (a review)
            if stage.histogram_from == "--hist":  # the option's file, not the stage's (a second review)
                raise ParameterError(str(exc), "--hist") from None
            raise FreqlabError(f"{stage.histogram_from or where}: {exc}" if where else str(exc)) from None
        if stage.weights:
            where = stage.weights_from or f"stage {stage.name!r}: weights"  # the stage's, the file's or --weights
            try:  # a preset's or a file's mix (missing, malformed, or not this histogram's): said of where it was named
                mix = Mixture.parse(stage.weights, name=where)
                h = weighted_histogram(h, mix, stream=key[2], window=key[3])[0]
            except FreqlabError as exc:
                if str(exc).startswith(where):
                    raise
                raise FreqlabError(f"{where}: {exc}") from None
        cache[key] = h
    return cache[key]


def _weights_described(stage: Stage) -> str | None:
    """The stage's mix as ``freq --weights`` describes it (shares not summing to 100% say they were normalised: a
    review found a schedule silent where ``freq`` said so), or None without weights.
    """
    if not stage.weights:
        return None
    from freqlab.frequency.mixture import Mixture

    return Mixture.parse(stage.weights, name=stage.weights_from or f"stage {stage.name!r}: weights").describe()


def _relative(base: Path, value) -> Path | None:
    if value is None or hasattr(value, "lengths"):  # none, or a LengthHistogram given as the default
        return value
    path = Path(expand_home(str(value)))
    return path if path.is_absolute() else base / path


@dataclass(frozen=True, repr=False)
class ScheduleFrequency(Displayed):
    """Per-stage raw frequencies f_k (int64: a count, or a curriculum's numerator over its common denominator,
    which the scaling cancels) and budgets T_k; their scaled sum F (float64). ``kinds[k]`` maps each layer kind of
    the *last* stage's layout (a :class:`LayerTrack` where its layers went through the stages in several ways) to
    the f those layers trained in stage k, as the kind they had there (``None`` for NoPE); ``histories`` gives each
    its kind in every stage.
    """

    schedule: Schedule
    frequencies: tuple[np.ndarray, ...]
    kinds: tuple[dict, ...] = ()
    histories: dict = field(default_factory=dict)  # kind of the last stage -> its layers' kind in each stage
    seed: int = 0  # the stream order of the stages that shuffle documents (pack, a curriculum's, a replay's)

    @functools.cached_property  # asked for by every sum over the stages: O(stages) each time
    def window(self) -> int:
        """The longest relative position + 1 any stage trains (a PoSE stage reaches beyond its window)."""
        return max(max(stage.L for stage in self.schedule.stages), *(f.size for f in self.frequencies))

    @property
    def tokens(self) -> int:
        """All the schedule's training tokens, Σ T_k."""
        return sum(stage.tokens for stage in self.schedule.stages)

    def _check_kind(self, kind: LayerKind | None) -> None:
        """A FreqlabError for a kind the last stage's layout has not, or whose layers went two ways (then one of its
        :class:`LayerTrack` names them); None (the data's total) and the keys of :attr:`kind_names` pass.
        """
        if kind is None or not self.histories or kind in self.histories:
            return
        tracks = [key.name for key in self.histories if getattr(key, "final", None) == kind]
        if tracks:
            raise FreqlabError(
                f"the layers that end as {kind.name} went through the stages in {len(tracks)} ways: ask for one of "
                f"{', '.join(tracks)} (kind_names)"
            )
        raise FreqlabError(
            f"no {kind.name} layers in the last stage's layout (its kinds: {', '.join(k.name for k in self.histories)})"
        )

    def stage_kinds(self, k: int) -> dict:
        """The last stage's layer kinds -> the f their layers trained in stage k (``{GLOBAL: f_k}`` without layouts)."""
        return self.kinds[k] if self.kinds else {GLOBAL: self.frequencies[k]}

    @property
    def kind_names(self) -> list[LayerKind]:
        """Every layer kind of any stage, in order of first appearance."""
        out: list[LayerKind] = []
        for k in range(len(self.frequencies)):
            out.extend(kind for kind in self.stage_kinds(k) if kind not in out)
        return out

    def stage_scaled(self, k: int, kind: LayerKind | None = None) -> np.ndarray:
        """f_k · T_k / f_k(0), zero-padded to the longest window (of one layer kind: zero if the stage lacks it)."""
        f = self.frequencies[k] if kind is None else self.stage_kinds(k).get(kind)
        out = np.zeros(self.window)
        if f is not None and f.size and f[0] > 0:
            # f_k / f_k(0): a PoSE expectation's integers are past a float, each and f(0) alike
            out[: f.size] = as_floats(f, int(f[0])) * self.schedule.stages[k].tokens
        return out

    @property
    def total(self) -> np.ndarray:
        """F(i): expected occurrences of position i over the whole schedule (float64)."""
        # a schedule has stages, so this is an array, never sum()'s 0
        return sum(self.stage_scaled(k) for k in range(len(self.frequencies)))  # type: ignore[return-value]

    def kind_total(self, kind: LayerKind | None, stages: int | None = None) -> np.ndarray:
        """F of one layer kind (None: of the stages' data) over the first ``stages`` stages (all by default)."""
        self._check_kind(kind)
        count = len(self.frequencies) if stages is None else stages
        return sum((self.stage_scaled(k, kind) for k in range(count)), np.zeros(self.window))

    def full_attention(self, k: int) -> bool:
        """Whether a RoPE layer kind of stage k trains every position the stage's data does (its f is the stage's
        f: global, or a window or chunk as long as the stage's): the totals without a kind are then its layers'.
        """
        f = self.frequencies[k]
        return any(kind.rope and g is not None and np.array_equal(g, f) for kind, g in self.stage_kinds(k).items())

    def occurrences(self, i: int, kind: LayerKind | None = None, stages: int | None = None) -> Fraction:
        """F(i) as an exact rational (of one layer kind, over the first ``stages`` stages)."""
        self._check_kind(kind)
        total = Fraction(0)
        for k in range(len(self.frequencies) if stages is None else stages):
            f = self.frequencies[k] if kind is None else self.stage_kinds(k).get(kind)
            if f is not None and i < f.size and f[0] > 0:
                total += Fraction(int(f[i]) * self.schedule.stages[k].tokens, int(f[0]))
        return total

    def effective_length(
        self,
        tau: float | None = None,
        kind: LayerKind | None = None,
        stages: int | None = None,
        *,
        without_gap: bool = False,
    ) -> int:
        """Largest i with F(i) >= tau (exact), of one layer kind, after the first ``stages`` (0 when none);
        ``without_gap``: the largest i with F(j) >= tau for every j <= i (-1 when F(0) < tau). F need not be
        non-increasing: a PoSE replay's skipped position ids leave distances it never trains below ones it does.
        """
        stages = len(self.frequencies) if stages is None else stages
        return self._effective_length(tau, kind, stages, self.kind_total(kind, stages), without_gap)

    def _effective_length(self, tau, kind, stages: int, F: np.ndarray, without_gap: bool = False) -> int:
        """:meth:`effective_length` of F, the kind's total over the first ``stages`` stages (summed by the caller)."""
        threshold = exact_tau(self.schedule.tau if tau is None else tau)  # nan, -5, True: a FreqlabError
        last = largest_reaching(
            F, threshold, lambda i: self.occurrences(i, kind, stages) >= threshold, prefix=without_gap
        )
        cap = self.reach_cap(kind, stages)
        if cap is not None:  # trained further in an earlier stage (as global layers): unusable past the window
            last = min(last, cap)
        return last if without_gap else max(last, 0)

    def reach_cap(self, kind: LayerKind | None, stages: int | None = None) -> int | None:
        """The largest position the layers of ``kind`` (a kind of the last stage) attend by construction after the
        first ``stages`` stages (all by default): w - 1 or C - 1 for the kind they have in the last of those stages;
        None where they are global there (or for the data's total, ``kind`` None).
        """
        if kind is None or not self.frequencies:
            return None
        history = self.histories.get(kind)
        now = kind if history is None else history[(len(self.frequencies) if stages is None else stages) - 1]
        # a window or chunk of the longest window or more caps nothing (a review: swa100 at L = 8 read "reach capped
        # at 7 by construction", as a window of 8 would)
        return now.reach(self.window) if now.size and now.size < self.window else None

    def reached(self, k: int, kind: LayerKind, position: int) -> Fraction:
        """Tokens of stage k trained (in layers of ``kind``) with at least ``position`` tokens of left context, i.e.
        that reached relative position ``position``: f_k(position) · T_k / f_k(0) (the exposure view, f(i) =
        Σ_{c >= i} h(c), :mod:`freqlab.frequency.exposure`).
        """
        self._check_kind(kind)
        f = self.stage_kinds(k).get(kind)
        if f is None or position >= f.size or f[0] <= 0:
            return Fraction(0)
        return Fraction(int(f[position]) * self.schedule.stages[k].tokens, int(f[0]))

    def reach_is_exposure(self, k: int) -> bool:
        """Whether f_k(W)·T_k/f_k(0) counts stage k's tokens with at least W of context: true when every query sees
        its keys at every distance 0..c (segments, fragments, pieces), false under PoSE, whose skipped position ids
        leave gaps (its pairs at distance W are no count of tokens).
        """
        spec = self.schedule.stages[k].position_ids
        return spec is None or position_ids_from_spec(spec).contiguous_contexts

    def reach_table(self) -> list[dict]:
        """Per stage and layer kind: for each earlier stage's window W (distinct, in order), the share of all the
        schedule's training tokens that this stage trained with at least W tokens of context (reached position W).
        NoPE layers carry no position frequency and are left out; a PoSE stage's shares are None (its f counts pairs at
        skipped position-id distances, not tokens with that much context).
        """
        total = self.tokens
        rows = []
        for k, stage in enumerate(self.schedule.stages):
            earlier = list(dict.fromkeys(s.L for s in self.schedule.stages[:k]))
            for kind, f in self.stage_kinds(k).items():
                if f is None:
                    continue
                exposure = self.reach_is_exposure(k)
                rows.append({
                    "stage": stage.name, "kind": kind.name, "L": stage.L,
                    "beyond": {str(W): float(self.reached(k, kind, W) / total) if exposure else None
                               for W in earlier},
                })  # fmt: skip
        return rows

    def to_dict(self, tau: float | None = None, *, name: str | None = None) -> dict:
        """The JSON of ``freqlab schedule``: totals, per stage (with per-kind effective lengths alone and after the
        stage, and the provenance of its numbers), per layer kind, the reach table (:meth:`reach_table`). ``tau``:
        the threshold (None: the schedule's); ``name``: what the schedule is called (None: its source).
        """
        schedule, total, window = self.schedule, self.total, self.window
        tau = schedule.tau if tau is None else tau
        checkpoints = sorted({window // 4, window // 2, (3 * window) // 4, window - 1})
        kinds = self.kind_names
        rope = [kind for kind in kinds if kind.rope]
        running = {kind: np.zeros(window) for kind in rope}  # each kind's F after stage k: O(stages) sums, not O(k²)
        stages = []
        for k, stage in enumerate(schedule.stages):
            for kind in rope:
                running[kind] += self.stage_scaled(k, kind)
            row = {
                "name": stage.name,
                "L": stage.L,
                "tokens": stage.tokens,
                # a PoSE or Dataset Decomposition stage cuts its documents itself: no regime (a review: JSON said
                # "natural" where the report shows "-")
                "regime": None if regime_replaced(stage.curriculum, stage.position_ids) else stage.regime,
                "histogram": str(getattr(stage.histogram, "corpus", None) or stage.histogram),
                "weights": stage.weights,
                "weights_described": _weights_described(stage),
                "layout": stage.layout.spec if stage.layout else "global",
                "effective_length_alone": effective_length(self.frequencies[k], stage.tokens, tau),
                "full_attention": self.full_attention(k),
                "effective_length_after": {kind.name: self._effective_length(tau, kind, k + 1, running[kind])
                                           for kind in rope},
            }  # fmt: skip
            for key in ("curriculum", "position_ids", "mixture"):
                if getattr(stage, key) is not None:
                    row[key] = getattr(stage, key)
            if stage.provenance:
                row["provenance"] = dict(stage.provenance)
                row["assumed"] = list(stage.assumed)
            stages.append(row)
        return {
            "schedule": str(schedule.source) if name is None else name,
            "title": schedule.title,
            "sources": list(schedule.sources),
            "notes": list(schedule.notes),
            **({"provenance": dict(schedule.provenance)} if schedule.provenance else {}),
            "window": window,
            "tokens": self.tokens,
            "tau": json_threshold(tau),
            "seed": self.seed,
            "full_attention": all(stage["full_attention"] for stage in stages),
            "rope_layers": any(kind.rope for kind in kinds),  # none: the last layout is NoPE only
            "effective_length": self.effective_length(tau),
            "reached_without_gap": self.effective_length(tau, without_gap=True) + 1,
            "share_at_most_half": share_at_most(total, window // 2),
            "share_at_least_three_quarters": share_at_least(total, (3 * window) // 4),
            "occurrences": {str(i): float(total[i]) for i in checkpoints},
            "kinds": [self._kind_dict(kind, tau) for kind in kinds],
            "stages": stages,
            "reach": self.reach_table(),
        }

    def _kind_dict(self, kind: LayerKind, tau: float) -> dict:
        """One layer kind over the whole schedule: its reach cap, effective length and mass shares (NoPE: a note)."""
        row = {"kind": kind.name, "rope": kind.rope, "reach_cap": self.reach_cap(kind)}
        if not kind.rope:
            return {**row, "note": "no rotary embedding: no position frequency; left out of RoPE plans"}
        total, window = self.kind_total(kind), self.window
        return {
            **row,
            "effective_length": self.effective_length(tau, kind),
            "share_at_most_half": share_at_most(total, window // 2),
            "share_at_least_three_quarters": share_at_least(total, (3 * window) // 4),
        }

    def _display(self) -> Display:
        """The stages and the effective length per layer kind at the schedule's tau (a review met a 6,395-character
        dataclass dump as the repr).
        """
        from freqlab.paths import printable
        from freqlab.sizes import human_count

        stages = self.schedule.stages
        tau = self.schedule.tau
        headline = (
            f"{printable(str(self.schedule.source))}: {len(stages)} stage{'s' * (len(stages) != 1)}, "
            f"{human_count(self.tokens)} tokens, longest window {self.window:,}; effective length "
            f"{self.effective_length():,} at tau = {human_count(tau)}"
        )
        kinds = [kind for kind in self.kind_names if kind.rope]
        shown = kinds and kinds != [GLOBAL]  # layer kinds apart: their effective lengths beside the data's
        lines = [", ".join(f"{kind.name} {self.effective_length(kind=kind):,}" for kind in kinds)] if shown else []
        rows = [
            (
                f"stage {k} ({printable(stage.name)})",
                f"L = {stage.L:,}, {human_count(stage.tokens)} tokens, {stage.regime}",
            )
            for k, stage in enumerate(stages, start=1)
        ]
        return Display("ScheduleFrequency", headline, lines=lines, rows=rows)

    def report(self, tau: float | None = None, *, name: str | None = None) -> str:
        """The terminal report of ``freqlab schedule`` (the numbers of :meth:`to_dict`): per stage its effective
        length alone and after it, the totals per layer kind, F at a few positions, the reach table, the notes.
        """
        from freqlab.display import columns, pad, percent, source_name
        from freqlab.paths import printable, printable_lines
        from freqlab.sizes import human_count

        data = self.to_dict(tau, name=name)
        tau, window = data["tau"], data["window"]
        # a title, sources and stage names come from the schedule's file: a terminal shows them, not obeys them
        lines = [printable(data["title"])] if data["title"] else []
        lines += [f"  source: {printable(source)}" for source in data["sources"]]
        corpus = self.schedule.histogram
        if isinstance(corpus, str | Path):  # the file the stages that name none read (a review: not said)
            lines.append(f"histogram: {printable(str(corpus))}")
        elif corpus is not None:  # a LengthHistogram given as it is
            from freqlab.corpus.builtin import BUILTIN_NAME

            label = f"built-in corpus {corpus.corpus}" if corpus.corpus == BUILTIN_NAME else corpus.corpus or "-"
            lines.append(
                f"histogram: {label} ({corpus.documents:,} documents, {corpus.tokens:,} tokens, "
                f"tokenizer {corpus.tokenizer or '-'})"
            )
        lines += [
            f"{printable(data['schedule'])}: {len(data['stages'])} stage{'s' if len(data['stages']) != 1 else ''}, "
            f"{human_count(data['tokens'])} tokens, "
            f"longest window {window}",
            f"budget     T = the stages' tokens (the schedule's); tau = {human_count(tau)}",
        ]
        no_layer = "no layer here" if data["rope_layers"] else "which the last stage's NoPE layers do not use"
        # the names' column as wide as the widest shown (at least 16: a review found wider ones pushing L= along)
        width = max([16, *(columns(source_name(stage["name"])) for stage in data["stages"])])
        for stage in data["stages"]:
            assumed = f"  [assumed: {', '.join(stage['assumed'])}]" if stage.get("assumed") else ""
            # a last layout of NoPE layers only (a review): no layer of the trained model uses a position, whatever
            # the stages before trained
            after = ", ".join(f"{k} {v}" for k, v in stage["effective_length_after"].items()) or "no rotary layers"
            notes = [] if stage["full_attention"] else [f"of full attention, {no_layer}"]
            # f_T(0) = T and f_T(i) < T past 0: with T <= tau no position past 0 reaches tau (a review: T = tau said
            # nothing)
            if stage["effective_length_alone"] == 0 and stage["tokens"] <= tau:  # 0: no position, or only 0 (review)
                reach = "no position reaches τ" if stage["tokens"] < tau else "position 0 alone reaches τ"
                shown, _ = counts_told_apart(stage["tokens"], tau)  # not "its 100B tokens < τ" at 100B (a review)
                noun = "token" if stage["tokens"] == 1 else "tokens"
                notes.append(f"its {shown} {noun} {'<' if stage['tokens'] < tau else '='} τ: {reach}")
            alone = f"alone ({'; '.join(notes)})" if notes else "alone"
            regime = stage["regime"] or "-"
            # one line whatever the data hold (a newline in a weights source split it: a review), the name as tables
            # show names (cut to 40 columns, padded by terminal columns)
            lines.append(printable(
                f"  {pad(source_name(stage['name']), width)} L={stage['L']:<7} "
                f"{human_count(stage['tokens']):>7} tokens  "
                f"{regime:<8}  effective length {alone}: {stage['effective_length_alone']}; after it: {after}"
                + _method(stage)
                + (f"  (weights {stage['weights_described']})" if stage["weights"] else "")
                + assumed
            ))  # fmt: skip
        some = any(stage["full_attention"] for stage in data["stages"])
        none_or_some = "not every stage" if some else "no stage's layout"
        whose = f"which {none_or_some} has: its layers below" if data["rope_layers"] else no_layer
        lines.append(
            f"all stages: effective length {data['effective_length']} at τ = {human_count(tau)}; "
            f"{percent(data['share_at_most_half'])} of position mass at i ≤ {window // 2}, "
            f"{percent(data['share_at_least_three_quarters'])} at i ≥ {(3 * window) // 4}"
            + ("" if data["full_attention"] else f" (of full attention, {whose})")
        )
        if data["effective_length"] >= max(data["reached_without_gap"], 1):  # F dips below tau before (PoSE's skips)
            lines.append(
                f"  F dips below τ before that: every position reaches it only in 0..{data['reached_without_gap'] - 1}"
                if data["reached_without_gap"]
                else "  F(0) is below τ"
            )
        for kind in data["kinds"]:
            if not kind["rope"]:
                lines.append(f"  layers {kind['kind']}: {kind['note']}")
            elif kind["reach_cap"] is not None:
                lines.append(
                    f"  layers {kind['kind']}: effective length {kind['effective_length']} "
                    f"(reach capped at {kind['reach_cap']} by construction)"
                )
            elif len(data["kinds"]) > 1:
                lines.append(f"  layers {kind['kind']}: effective length {kind['effective_length']}")
        lines += [f"  F({i}) = {human_count(value)}" for i, value in data["occurrences"].items()]
        rows = [row for row in data["reach"] if row["beyond"]]
        if rows:
            lines.append("share of all training tokens that reached each earlier stage's window (context >= W):")
            reach_width = max([16, *(columns(source_name(row["stage"])) for row in rows)])
            for row in rows:
                shares = ", ".join(
                    f"W={w}: {100 * v:.3g}%" if v is not None else f"W={w}: n/a (PoSE: position ids skip)"
                    for w, v in row["beyond"].items()
                )
                lines.append(f"  {pad(source_name(row['stage']), reach_width)} {row['kind']:<10} {shares}")
        lines += [f"note: {printable(note)}" for note in data["notes"]]  # a note's newline split it (a review)
        return printable_lines(lines)


def _method(stage: dict) -> str:
    """A stage line's note of its curriculum or position ids (a review: only --json named them)."""
    from freqlab.paths import printable  # a kind from the schedule's file: a terminal shows it, not obeys it

    for key in ("curriculum", "position_ids"):
        spec = stage.get(key)
        if isinstance(spec, dict) and spec.get("kind"):
            rows = (
                {"pose": POSE_ROWS, "scaled": SCALED_DISTANCES}.get(spec["kind"], "") if key == "position_ids" else ""
            )
            return f"  ({key.replace('_', ' ')}: {printable(str(spec['kind']))}{rows})"
    return ""


def stage_frequency(stage: Stage, h, *, seed: int = 0, where: str | None = None) -> tuple[np.ndarray, dict]:
    """f of one stage on its histogram ``h`` and f per layer kind of its layout.

    A ``curriculum`` or ``position_ids`` stage's f is the delegated module's exact frequency (its int64 numerator:
    the scaling by T / f(0) cancels the common denominator). Its sliding-window layers are that f cut at the window
    (pairs closer than w are unchanged by the window); chunked layers need each segment's row offset, which a
    curriculum does not give, and under PoSE's position ids a window over token distances is not one over
    position-id differences: both are errors, unless the window or chunk holds L tokens or more (a row holds at most
    L: the layer is global). A ``scaled`` (PI / YaRN) stage keeps the position ids: its f and each kind's are the
    regime's.
    """
    where = where or f"stage {stage.name}"  # a schedule names it as parse_schedule does: "stage 2 (long)"
    layout = stage.layout or Layout((GLOBAL,))
    if stage.curriculum is not None and stage.position_ids is not None:
        raise FreqlabError(f"{where}: give a curriculum or position_ids, not both")
    if stage.curriculum is None and stage.position_ids is None:
        f = position_frequency(h.lengths, h.counts, stage.L, stage.regime, seed=seed)
        kinds = layout_frequency(h.lengths, h.counts, stage.L, layout, stage.regime, seed=seed).kinds
        return f, {kind.kind: kind.f for kind in kinds}
    key = "curriculum" if stage.curriculum is not None else "position_ids"
    if stage.curriculum is not None and stage.curriculum.get("kind") == "skyladder" and "rate" in stage.curriculum:
        raise FreqlabError(
            f"{where}: a curriculum inside a stage takes share (of the stage's steps), not rate: "
            "rate counts steps of the histogram's own rows, not of the stage's tokens"
        )
    try:  # the delegated module's errors (a bad spec, a start past L, a PoSE target below L) name the stage
        method = (curriculum_from_spec if key == "curriculum" else position_ids_from_spec)(getattr(stage, key))
        # a curriculum counts the stage's steps (its tokens), which the histogram's rows stand for in proportion
        steps = {"stage_tokens": stage.tokens} if key == "curriculum" else {}
        exact = method.frequency(h.lengths, h.counts, stage.L, stage.regime, seed=seed, **steps)
    except FreqlabError as exc:
        raise FreqlabError(f"{where}: {key}: {exc}") from None
    # the numerator: int64 where it fits, Python integers beyond 2^63 (PoSE on a large corpus), exact either way; the
    # stage is scaled by T / f(0), which cancels the common denominator
    f = exact.numerator
    if isinstance(method, Scaled):  # PI / YaRN keep the position ids: f is the regime's, over
        # token distances, and so is each layer kind's (5*swa1K+global with a x8 PI stage was refused: a review)
        kinds = layout_frequency(h.lengths, h.counts, stage.L, layout, stage.regime, seed=seed).kinds
        return f, {kind.kind: kind.f for kind in kinds}
    out: dict = {}
    for kind in layout.kinds:
        if kind.kind == "nope":
            out[kind] = None
        elif kind.kind == "global" or kind.size >= stage.L:  # a row holds at most L tokens: no mask of w >= L cuts it
            out[kind] = f
        elif kind.kind == "swa" and key == "curriculum":
            out[kind] = truncate_to_window(f, kind)
        else:
            raise FreqlabError(
                f"{where}: {kind.name} layers with a {key} stage are not supported (a {kind.kind} mask "
                f"{'needs row offsets' if kind.kind == 'chunk' else 'counts token distances'})"
            )
    return f, out


def schedule_frequency(schedule: Schedule | str | os.PathLike, *, seed: int = 0) -> ScheduleFrequency:
    """Evaluate every stage's frequency on its histogram (each file is read once), weighted by its ``weights``,
    per layer kind of its layout.

    Parameters
    ----------
    schedule : Schedule, str or Path
        The schedule (see :func:`load_schedule`), or the path of its file.
    seed : int
        Seed of the shuffled document order, in the regimes that need one.

    Returns
    -------
    ScheduleFrequency
        Each stage's frequency and the total F(i) = Σ_stages f_k(i) · T_k / f_k(0).
    """
    if isinstance(schedule, str | os.PathLike):  # a review met AttributeError: 'str' object has no attribute 'stages'
        schedule = load_schedule(schedule)
    elif not isinstance(schedule, Schedule):
        raise FreqlabError(
            f"schedule_frequency takes a Schedule or a schedule file's path, got {type(schedule).__name__}"
        )
    window = max(stage.L for stage in schedule.stages)
    kept = sum(stage.L for stage in schedule.stages)  # every stage's f, then F and one scaled stage in float64
    require_memory(
        8 * kept + 24 * window,
        f"{schedule.source}: stages of L = {kept:,} positions in all",
        "every stage's f(i) and their sum F(i)",
    )
    cache: dict = {}
    frequencies, kinds = [], []
    from freqlab.histogram import LENGTH_UNITS, check_same_units  # polars: not at module level (see stage_histogram)

    histograms = [  # named as parse_schedule names a stage
        stage_histogram(stage, cache, where=f"{schedule.source}: stage {k} ({stage.name})")
        for k, stage in enumerate(schedule.stages, start=1)
    ]
    named = zip(schedule.stages, histograms, strict=True)
    check_same_units([(f"stage {stage.name!r} ({stage.histogram})", h) for stage, h in named], LENGTH_UNITS)
    for k, (stage, h) in enumerate(zip(schedule.stages, histograms, strict=True), start=1):
        if h.documents == 0:
            raise FreqlabError(f"{stage.histogram}: the histogram holds no documents")
        try:
            f, per_kind = stage_frequency(stage, h, seed=seed, where=f"stage {k} ({stage.name})")
        except FreqlabError as exc:  # a stage's curriculum or position ids: named with the schedule's file
            raise FreqlabError(f"{schedule.source}: {exc}") from None
        if f[0] == 0:  # Dataset Decomposition of documents all shorter than its smallest bucket added nothing but
            # still counted its tokens in the schedule's total (a review)
            raise FreqlabError(
                f"{schedule.source}: stage {k} ({stage.name}) trains no token of its histogram (every document "
                f"is dropped), so it cannot train its {stage.tokens:,} tokens"
            )
        frequencies.append(f)
        kinds.append(per_kind)
    final, histories = _final_kinds(schedule, kinds)
    return ScheduleFrequency(schedule, tuple(frequencies), tuple(final), histories, seed)


@dataclass(frozen=True)
class LayerTrack:
    """Layers that end as ``final`` after going through the stages as ``path`` (their kind in each stage), where
    layers of one final kind went two ways (sliding-window layers made global for the last stage beside layers
    global throughout); read as a :class:`~freqlab.frequency.layouts.LayerKind` (``name`` says the path).
    """

    final: LayerKind
    path: tuple[LayerKind, ...]

    kind = property(lambda self: self.final.kind)
    size = property(lambda self: self.final.size)
    rope = property(lambda self: self.final.rope)
    name = property(lambda self: f"{self.final.name} (was {' > '.join(kind.name for kind in self.path[:-1])})")

    def reach(self, L: int) -> int:
        """The final kind's reach."""
        return self.final.reach(L)


def _final_kinds(schedule: Schedule, kinds: list[dict]) -> tuple[list[dict], dict]:
    """Each stage's f per layer kind of the *last* stage's layout, following each layer through the stages, and each
    final kind's history (its layers' kind in every stage).

    Layer l has kind ``layout_k.layers[l % period_k]`` in stage k (a stage without a layout: every layer global), so
    the layers that end as sliding-window layers of 4K may have trained as windows of 1K, or as global layers,
    before: their f in each stage is that stage's f of the kind they had there (None while NoPE: no position
    trained). The layers walked are a model config's (a layout read from one lists them all), else the periods'
    least common multiple. Layers of one final kind with different histories are followed apart
    (:class:`LayerTrack`); NoPE layers, which train no position, are not.
    """
    given = [stage.layout for stage in schedule.stages]
    layouts = [layout.layers if layout is not None else (GLOBAL,) for layout in given]
    models = {len(layout.layers) for layout in given if layout is not None and layout.whole}
    if len(models) > 1:
        raise FreqlabError(
            f"{schedule.source}: the stages' model configs have {' and '.join(map(str, sorted(models)))} layers: "
            "one model is trained through a schedule"
        )
    period = models.pop() if models else math.lcm(*map(len, layouts))
    if period > MAX_LAYERS:
        raise FreqlabError(
            f"{schedule.source}: the stages' layouts repeat together only every {period:,} layers (more than "
            f"{MAX_LAYERS:,}): give layouts whose periods fit"
        )
    paths: dict[LayerKind, list[tuple]] = {}
    for layer in range(period):
        path = tuple(layers[layer % len(layers)] for layers in layouts)
        if not path[-1].rope:  # NoPE at the end: what it trained before is no position the model uses
            path = (path[-1],) * len(path)
        if path not in paths.setdefault(path[-1], []):
            paths[path[-1]].append(path)
    histories = {
        (final if len(ways) == 1 else LayerTrack(final, path)): path for final, ways in paths.items() for path in ways
    }
    tracked = [
        {key: (per_kind.get(path[k]) if key.rope else None) for key, path in histories.items()}
        for k, per_kind in enumerate(kinds)
    ]
    return tracked, histories
