"""Deprecated: ``freqlab.plan.giraffe`` is renamed :mod:`freqlab.plan.rope_bases`.

Importing it warns once and gives the new module (the same objects).
"""

from freqlab.deprecation import alias_module

__freqlab_shim__ = True
alias_module("freqlab.plan.giraffe", "freqlab.plan.rope_bases")
