"""freqlab.apply.probe: needle prompts of exact token lengths, needle depths, scoring and the effective-length rule
(An et al., ICLR 2025, Sec. 3: 4 needles, a test passes with 2 retrieved, lengths grow until the model fails)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from apply.tiny_tokenizer import tiny_tokenizer

from freqlab.apply.probe import (
    NEEDLE,
    PromptBuilder,
    effective_length,
    hf_builder,
    largest_passing,
    probe,
    retrieved,
    ruler_command,
)
from freqlab.errors import FreqlabError


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def builder(tokenizer):
    return hf_builder(tokenizer)


@pytest.mark.parametrize("length", [230, 231, 300, 511, 2000])
@pytest.mark.parametrize("depth", [0.0, 0.3, 1.0])
def test_prompts_have_exact_token_lengths(builder, length, depth):
    prompt = builder.build(length, depth, np.random.default_rng(length))
    assert len(prompt.ids) == prompt.length == length


def test_the_template_minimum_is_enforced(builder):
    assert builder.minimum_length() == 230  # this tokenizer: instruction, 4 needles and the question, no haystack
    builder.build(230, 0.5, np.random.default_rng(0))
    with pytest.raises(FreqlabError, match="length 229 is too short for the needle template"):
        builder.build(229, 0.5, np.random.default_rng(0))


@pytest.mark.parametrize("depth", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_the_needle_block_starts_at_the_requested_depth(builder, tokenizer, depth):
    length = 1000
    prompt = builder.build(length, depth, np.random.default_rng(7))
    needle = [len(builder.needle_ids(n)) for n in prompt.numbers]
    hay = length - len(builder.head) - sum(needle) - len(builder.query)
    assert prompt.needle_starts[0] == len(builder.head) + round(depth * hay)
    for start, size, number in zip(prompt.needle_starts, needle, prompt.numbers):
        assert tokenizer.decode(prompt.ids[start : start + size]) == NEEDLE.format(number=number)
    end = prompt.needle_starts[-1] + needle[-1]
    if depth == 1.0:  # right before the question
        assert end == length - len(builder.query)
    if depth == 0.0:  # right after the instruction
        assert prompt.needle_starts[0] == len(builder.head)
    assert prompt.ids[-len(builder.query) :] == builder.query


def test_needles_are_distinct_six_digit_numbers_fixed_by_the_seed(builder):
    a = builder.build(400, 0.5, np.random.default_rng([0, 400, 2, 1]))
    b = builder.build(400, 0.5, np.random.default_rng([0, 400, 2, 1]))
    assert a == b
    assert len(set(a.numbers)) == 4 and all(len(n) == 6 and n.isdigit() and n[0] != "0" for n in a.numbers)


def test_the_tokenizers_leading_special_tokens_are_part_of_the_length():
    encode = lambda text: [ord(c) for c in text]  # noqa: E731 - one token per character
    builder = PromptBuilder(encode, prefix=[1], needles=2)
    prompt = builder.build(500, 0.0, np.random.default_rng(0))
    assert prompt.ids[0] == 1 and len(prompt.ids) == 500
    assert prompt.needle_starts[0] == 1 + len(builder.head) - 1  # head = BOS + instruction


def test_scoring_counts_whole_numbers():
    numbers = ["144231", "543171", "264468", "423103"]
    assert retrieved("144231, 543171", numbers) == 2
    assert retrieved("1442310 543171 264468 423103", numbers) == 3  # 1442310 is not 144231
    assert retrieved("no numbers at all", numbers) == 0


def test_the_effective_length_rule():
    lengths = [1024, 1152, 1280, 1408]
    assert effective_length(lengths, [1.0, 0.8, 0.5, 0.49]) == 1280  # 0.5 passes the default threshold
    assert effective_length(lengths, [0.4, 1.0, 1.0, 1.0]) == 0  # the shortest fails: below every tested length
    assert effective_length(lengths, [1.0, 0.2, 1.0, 1.0]) == 1024  # the first failure stops it ...
    assert largest_passing(lengths, [1.0, 0.2, 1.0, 1.0]) == 1408  # ... though a longer length passes again
    assert effective_length(lengths[::-1], [0.49, 0.5, 0.8, 1.0]) == 1280  # any order
    assert effective_length(lengths, [1.0, 0.9, 0.9, 0.9], threshold=0.95) == 1024


def test_probe_bookkeeping_with_a_reader_of_the_last_tokens(builder, tokenizer):
    """A stand-in model that 'reads' only its last D tokens: a needle is retrieved iff its digits lie there."""
    D = 300

    def generate(batch, max_new_tokens):
        return [tokenizer.decode(ids[-D:]) for ids in batch]

    lengths, depths, trials = [250, 400, 1000], [0.0, 0.5, 1.0], 3
    result = probe(generate, builder, lengths, depths, trials=trials, batch_size=4, seed=5, label="reader")
    expected = np.zeros((3, 3), dtype=np.int64)  # the same tests, one at a time, in another order
    for i, depth in enumerate(depths):
        for j, length in enumerate(lengths):
            for k in range(trials):
                prompt = builder.build(length, depth, np.random.default_rng([5, length, i, k]))
                expected[i, j] += retrieved(generate([prompt.ids], 0)[0], prompt.numbers) >= 2
    assert result.passes.tolist() == expected.tolist()
    assert result.passes[:, 0].tolist() == [3, 3, 3]  # 250 <= D: everything is read
    # 1000: the haystack is 770 tokens; at depth 0.5 the needles end near token 523 < 700 = 1000 - D
    assert result.passes[:, 2].tolist() == [0, 0, 3]
    assert result.accuracy.tolist() == [1.0, expected[:, 1].sum() / 9, 1 / 3]
    assert result.effective_length == (400 if expected[:, 1].sum() / 9 >= 0.5 else 250)
    assert result.to_dict()["passes"] == expected.tolist()


def test_ruler_command_lists_the_lengths():
    assert ruler_command("m", [8192, 4096, 8192]) == (
        "lm_eval --model hf --model_args pretrained=m,max_length=8192 --tasks ruler "
        "--metadata='{\"max_seq_lengths\":[4096,8192]}' --batch_size 1"
    )
