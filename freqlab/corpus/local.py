"""Deprecated: ``freqlab.corpus.local`` is renamed :mod:`freqlab.corpus.local_files`.

Importing it warns once and gives the new module (the same objects).
"""

from freqlab.deprecation import alias_module

__freqlab_shim__ = True
alias_module("freqlab.corpus.local", "freqlab.corpus.local_files")
