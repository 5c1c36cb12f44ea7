"""Deprecated: ``freqlab.frequency.megatron`` is renamed :mod:`freqlab.frequency.megatron_replay`.

Importing it warns once and gives the new module (the same objects).
"""

from freqlab.deprecation import alias_module

__freqlab_shim__ = True
alias_module("freqlab.frequency.megatron", "freqlab.frequency.megatron_replay")
