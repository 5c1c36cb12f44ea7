"""Deprecated: ``freqlab.corpus.tokenized`` is renamed :mod:`freqlab.corpus.token_files`.

Importing it warns once and gives the new module (the same objects).
"""

from freqlab.deprecation import alias_module

__freqlab_shim__ = True
alias_module("freqlab.corpus.tokenized", "freqlab.corpus.token_files")
