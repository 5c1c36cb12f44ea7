"""Deprecated: ``freqlab.tokenize`` is renamed :mod:`freqlab.tokenization` (the old name shadowed the standard
library's ``tokenize``); importing it warns once and gives the new package, its submodules under the old names."""

from freqlab.deprecation import alias_package, warn_renamed

__freqlab_shim__ = True
warn_renamed("freqlab.tokenize", "freqlab.tokenization")
alias_package("freqlab.tokenize", "freqlab.tokenization")
