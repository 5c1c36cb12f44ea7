"""Corpus reading for ``freqlab scan``: presets, Hub datasets, local files, and the built-in corpus.

>>> from freqlab.corpus import open_corpus
>>> corpus = open_corpus()                      # built-in: the Python standard library, offline
>>> doc = next(corpus.shards[0].read())
>>> doc.error is None and isinstance(doc.text, str)
True

``open_corpus("slimpajama", data_files="/data/SlimPajama/train/chunk*/*.jsonl.zst")`` reads local copies with
the preset's fields; ``open_corpus("cerebras/SlimPajama-627B")`` streams the Hub. See :mod:`.open` for how
``dataset`` is interpreted, :mod:`.local_files` for formats, :mod:`.presets` for the preset table, and :mod:`.base`
for the record-level error reasons.
"""

from freqlab.corpus.base import MISSING_SOURCE, REASONS, Corpus, Document, Shard
from freqlab.corpus.builtin import builtin_corpus
from freqlab.corpus.fields import Fields, ReadOptions
from freqlab.corpus.open import open_corpus
from freqlab.corpus.presets import PRESETS, Preset
from freqlab.deprecation import renamed_attributes

__all__ = [
    "MISSING_SOURCE",
    "PRESETS",
    "REASONS",
    "Corpus",
    "Document",
    "Fields",
    "Preset",
    "ReadOptions",
    "Shard",
    "builtin_corpus",
    "open_corpus",
]

# old submodule names (0.1), kept for one release: each look-up warns and gives the module (freqlab.deprecation)
__getattr__ = renamed_attributes(
    "freqlab.corpus",
    {},
    submodules={
        "files": "freqlab.corpus.file_discovery",
        "local": "freqlab.corpus.local_files",
        "remote": "freqlab.corpus.remote_files",
        "resolve": "freqlab.corpus.open",
        "tokenized": "freqlab.corpus.token_files",
    },
)
