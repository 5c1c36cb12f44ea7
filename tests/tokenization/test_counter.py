"""freqlab.tokenization.counter: which texts go to the reference because they hold a routed string."""

import random

import pytest

from freqlab.tokenization.counter import JOIN_BELOW_CHARACTERS, Engines, LiteralFinder

ROUTED = ["<|begin_of_text|>", "<|eot_id|>", "[INST]", "'\u017f"]


def holding(texts: list[str], routed=ROUTED) -> list[int]:
    """The obvious reference: every text, every routed string, Python's ``in``."""
    return [i for i, text in enumerate(texts) if any(word in text for word in routed)]


def mixed_texts(seed: int, length: int, n: int = 200) -> list[str]:
    rng = random.Random(seed)
    pieces = ["a", " ", "<", "|", "<|", "[", "INST", "]", "'", "\u017f", "eot_id", "|>", "\x00", "\n"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 2 * length))) for _ in range(n)]
    for i in rng.sample(range(n), 5):
        texts[i] += rng.choice(ROUTED)
    return texts


@pytest.mark.parametrize("length", [3, JOIN_BELOW_CHARACTERS * 2])  # texts searched joined, then one by one
def test_holding_routed_finds_exactly_the_texts_with_a_routed_string(length: int) -> None:
    engines = Engines({}, ROUTED)
    for seed in range(5):
        texts = mixed_texts(seed, length)
        assert engines.holding_routed(texts) == holding(texts)


@pytest.mark.parametrize(
    "words",
    [["'\u017f"], ["x\u017fy", "\u017f"], ["\u017f\U0001f600", "a\U0001f600"], ["é'", "é"], ["\u2019s", "\u2019t"]],
)
def test_a_search_first_looking_for_one_character_beyond_latin1_finds_what_in_finds(words) -> None:
    """The prefilter (one character all the words hold, beyond Latin-1, looked for with ``in``) never changes the
    answer: texts of each of Python's string widths (Latin-1, two bytes, four), the character alone, the words."""
    rng = random.Random(7)
    pieces = ["a", "'", "é", "\u017f", "\u2019", "s", "t", "y", "x", "\U0001f600", " "]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(3000)] + words
    finder = LiteralFinder(words)
    assert [finder.search(t) for t in texts] == [any(w in t for w in words) for t in texts]
    engines = Engines({}, fastokens_routed=words)
    assert engines.holding(engines.past_fastokens, texts) == holding(texts, words)


def test_a_routed_string_is_never_found_across_two_texts() -> None:
    engines = Engines({}, ROUTED)
    assert engines.holding_routed(["x <|eot", "_id|> y"]) == []
    assert engines.holding_routed(["[IN", "ST]", "'", "\u017f"]) == []
    assert engines.holding_routed(["", "ok", "a [INST] b"]) == [2]


def test_a_routed_string_with_a_nul_is_searched_text_by_text() -> None:
    engines = Engines({}, ["a\x00b"])
    assert not engines.joinable
    assert engines.holding_routed(["xa", "\x00b", "a\x00b"]) == [2]


def test_no_routed_strings_hold_nothing() -> None:
    assert Engines({}, ()).holding_routed(["<|eot_id|>"]) == []


@pytest.mark.parametrize(
    "words",
    [["<" + "x" * k for k in range(1, 600)], ["=" * 700, "<|eot|>"]],
    ids=["600 tokens each a prefix of the next", "a token of 700 characters"],
)
def test_tries_too_deep_for_the_regex_compiler_fall_back_to_a_flat_alternation(words):
    """A trie nests one group per prefix (and Python recursion per character): past ~500 levels re.compile raises
    RecursionError, which stopped load_tokenizer. Both finders then match the same as the trie would."""
    from freqlab.tokenization.counter import literal_search_regex, longest_match_regex

    text = f"a{words[-1]}b{words[0]}c{words[len(words) // 2]}"
    expected = [words[-1], words[0], words[len(words) // 2]]
    assert longest_match_regex(words).findall(text) == expected
    assert literal_search_regex(words).search(text) is not None
    assert literal_search_regex(words).search("a" + words[0][:-1] + "b") is None or len(words[0]) == 1
