"""The runnable examples in the corpus modules' docstrings hold."""

import doctest

import pytest

import freqlab.corpus
import freqlab.corpus.builtin
import freqlab.corpus.fields
import freqlab.corpus.resolve


@pytest.mark.parametrize(
    "module", [freqlab.corpus, freqlab.corpus.builtin, freqlab.corpus.fields, freqlab.corpus.resolve]
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
