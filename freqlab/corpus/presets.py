"""Named corpora: where a widely used pretraining corpus lives and which fields hold text and source label.

Presets are data, in ``freqlab/data/presets.json``; this module only loads them.

=====================  ==========================================  ========  =========================
preset                 Hub dataset                                 text      source label
=====================  ==========================================  ========  =========================
slimpajama             cerebras/SlimPajama-627B                    text      meta.redpajama_set_name
slimpajama-6b          DKYoon/SlimPajama-6B                        text      meta.redpajama_set_name
redpajama-1t-sample    togethercomputer/RedPajama-Data-1T-Sample   text      (none: see note)
fineweb                HuggingFaceFW/fineweb                       text      (none; ``dump`` per crawl)
fineweb-edu            HuggingFaceFW/fineweb-edu                   text      (none; ``dump`` per crawl)
pile                   (local copies only)                         text      meta.pile_set_name
pile-uncopyrighted     monology/pile-uncopyrighted                 text      meta.pile_set_name
=====================  ==========================================  ========  =========================

``open_corpus("slimpajama")`` streams the Hub dataset; ``open_corpus("slimpajama", data_files=...)`` reads
local copies of its files with the same field mapping. ``PRESETS[name].note`` has the details.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from importlib import resources

from freqlab.corpus.fields import Fields
from freqlab.errors import FreqlabError


@dataclass(frozen=True)
class Preset:
    """A corpus preset: Hub ``id`` (None: local copies only), config, split, field mapping and notes."""

    name: str
    id: str | None
    config: str | None
    split: str
    text_field: str
    source_field: str | None
    files: str = ""
    note: str = ""

    @property
    def fields(self) -> Fields:
        """The preset's text and source fields."""
        return Fields(self.text_field, self.source_field)


def _load_presets() -> dict[str, Preset]:
    raw = json.loads(resources.files("freqlab").joinpath("data/presets.json").read_text(encoding="utf-8"))
    return {name: Preset(name=name, **entry) for name, entry in raw.items()}


#: Preset name -> :class:`Preset` (Hub id, text and source fields), read from ``freqlab/data/presets.json``.
PRESETS: dict[str, Preset] = _load_presets()


def get_preset(name: str) -> Preset:
    """The preset called ``name``; an unknown name raises FreqlabError listing the presets (and a close match)."""
    if name in PRESETS:
        return PRESETS[name]
    close = difflib.get_close_matches(name, PRESETS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise FreqlabError(
        f"unknown corpus preset {name!r}: {hint}presets are {', '.join(PRESETS)}; "
        "a Hugging Face dataset is given as owner/name, local data as a path or glob"
    )
