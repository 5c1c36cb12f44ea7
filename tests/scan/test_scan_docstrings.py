"""The runnable examples in the scan modules' docstrings hold (the exact corpus estimate among them)."""

import doctest

import pytest

import freqlab.scan.checkpoint
import freqlab.scan.counts
import freqlab.scan.driver
import freqlab.scan.summary


@pytest.mark.parametrize(
    "module", [freqlab.scan.checkpoint, freqlab.scan.counts, freqlab.scan.driver, freqlab.scan.summary]
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
