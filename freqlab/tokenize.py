"""Deprecated: ``freqlab.tokenize`` is renamed :mod:`freqlab.tokenization` (the old name shadowed the standard
library's ``tokenize``); importing it warns once and gives the new package, its submodules under the old names.
"""

from freqlab.deprecation import alias_module

__freqlab_shim__ = True
alias_module("freqlab.tokenize", "freqlab.tokenization")
