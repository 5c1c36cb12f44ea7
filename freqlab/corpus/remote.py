"""Deprecated: ``freqlab.corpus.remote`` is renamed :mod:`freqlab.corpus.remote_files`.

Importing it warns once and gives the new module (the same objects).
"""

from freqlab.deprecation import alias_module

__freqlab_shim__ = True
alias_module("freqlab.corpus.remote", "freqlab.corpus.remote_files")
