"""Deprecated: ``freqlab.corpus.resolve`` is renamed :mod:`freqlab.corpus.open`.

Importing it warns once and gives the new module (the same objects).
"""

from freqlab.deprecation import alias_module

__freqlab_shim__ = True
alias_module("freqlab.corpus.resolve", "freqlab.corpus.open")
