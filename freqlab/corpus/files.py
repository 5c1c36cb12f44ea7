"""Deprecated: ``freqlab.corpus.files`` is renamed :mod:`freqlab.corpus.file_discovery`.

Importing it warns once and gives the new module (the same objects).
"""

from freqlab.deprecation import alias_module

__freqlab_shim__ = True
alias_module("freqlab.corpus.files", "freqlab.corpus.file_discovery")
