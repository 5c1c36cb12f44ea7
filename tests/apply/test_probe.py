"""freqlab.apply.probe: needle prompts of exact token lengths, needle depths, scoring and the effective-length rule
(An et al., ICLR 2025, Sec. 3: 4 needles, a test passes with 2 retrieved, lengths grow until the model fails)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from apply.tiny_tokenizer import tiny_tokenizer

from freqlab.apply.probe import (
    NEEDLE,
    ProbeReport,
    ProbeResult,
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
def test_needles_are_spread_over_the_haystack_at_the_requested_phase(builder, tokenizer, depth):
    """The paper inserts its 4 needles "at various positions" (Sec. 3, Table 5): needle k of n starts after
    round((k + depth) · H / n) haystack tokens (one in each n-th), not all in one block at one depth."""
    length = 1000
    prompt = builder.build(length, depth, np.random.default_rng(7))
    needle = [len(builder.needle_ids(n)) for n in prompt.numbers]
    hay = length - len(builder.head) - sum(needle) - len(builder.query)
    for k, (start, size, number) in enumerate(zip(prompt.needle_starts, needle, prompt.numbers)):
        assert start == len(builder.head) + round((k + depth) * hay / 4) + sum(needle[:k])
        assert tokenizer.decode(prompt.ids[start : start + size]) == NEEDLE.format(number=number)
    gaps = np.diff(prompt.needle_starts) - np.array(needle[:-1])  # haystack between two needles: about H / 4
    assert all(abs(gap - hay / 4) <= 1 for gap in gaps)
    end = prompt.needle_starts[-1] + needle[-1]
    if depth == 1.0:  # the last right before the question
        assert end == length - len(builder.query)
    if depth == 0.0:  # the first right after the instruction
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
    # 1000: the haystack is 770 tokens, a needle every ~200 tokens; only at phase 1 are two needles in the last D
    assert result.passes[:, 2].tolist() == [0, 0, 3]
    assert result.accuracy.tolist() == [1.0, expected[:, 1].sum() / 9, 1 / 3]
    assert result.effective_length == (400 if expected[:, 1].sum() / 9 >= 0.5 else 250)
    assert result.to_dict()["passes"] == expected.tolist()


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("[enforce fail at alloc_cpu.cpp:124] DefaultCPUAllocator: can't allocate memory: you tried ..."),
        MemoryError(),
        type("OutOfMemoryError", (RuntimeError,), {})("CUDA out of memory. Tried to allocate 20.00 GiB\nmore"),
    ],
)
def test_running_out_of_memory_is_one_line_naming_the_length_and_what_was_tested_before(builder, tokenizer, error):
    """A review: torch's allocator traceback, and the lengths already tested lost with it."""

    def generate(batch, max_new_tokens):
        if len(batch[0]) > 400:
            raise error
        return [tokenizer.decode(ids) for ids in batch]

    with pytest.raises(FreqlabError) as raised:
        probe(generate, builder, [250, 400, 1000], [0.0, 1.0], trials=2, batch_size=3, label="stock")
    first = str(error).splitlines()[0] if str(error) else "MemoryError"
    assert str(raised.value) == (
        f"stock: out of memory at length 1,000 with 3 prompt(s) at once ({first}): use a smaller batch size or "
        "shorter lengths; tested before it: 250: 4/4 passed, 400: 4/4 passed"
    )

    def failing(batch, max_new_tokens):
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):  # another error stays itself
        probe(failing, builder, [250], [0.0], trials=1)


def _digit_merging_builder():
    """One token per character, but '000000' one token: the template's minimum (measured with 000000) is 20 tokens
    below a real test's, whose numbers take 6 tokens each."""

    def encode(text):
        ids = []
        for k, chunk in enumerate(text.split("000000")):
            ids += ([0] if k else []) + [ord(c) for c in chunk]
        return ids

    return PromptBuilder(encode, needles=4)


def test_a_length_too_short_for_a_tests_needles_is_refused_before_anything_runs():
    builder = _digit_merging_builder()
    assert builder.minimum_length() == len(builder.head) + len(builder.query) + 4 * len(builder.needle_ids("000000"))

    def generate(batch, max_new_tokens):
        raise AssertionError("nothing may run before every length is known to hold its tests")

    short = builder.minimum_length() + 4  # the template's minimum passes; 4 needles of 6 digits need 20 more
    with pytest.raises(FreqlabError, match=f"length {short} is too short for the needle template"):
        probe(generate, builder, [short + 1000, short], [0.5], trials=2)


def test_the_answer_may_name_every_needle_of_its_tests():
    """max_new_tokens: the longest answer naming every needle (' n,' each) of the tests, plus 8."""
    builder, seen = _digit_merging_builder(), []

    def generate(batch, max_new_tokens):
        seen.append(max_new_tokens)
        return [""] * len(batch)

    probe(generate, builder, [600], [0.0, 1.0], trials=2, seed=3)
    longest = max(
        sum(len(builder.encode(f" {n},")) for n in builder.needles_for(np.random.default_rng([3, 600, i, k]))[0])
        for i in range(2)
        for k in range(2)
    )
    assert set(seen) == {longest + 8} and longest == 4 * 8  # ' ', six digits, ',' (not 3 tokens: ' 000000,')


@pytest.mark.parametrize(
    ("lengths", "depths", "message"),
    [
        ([], [0.5], "no lengths to test"),
        ([-5], [0.5], "a length to test must be a whole number of tokens from 1 to 1,073,741,824, got -5"),
        ([500.7], [0.5], "got 500.7"),
        ([float("inf")], [0.5], "got inf"),
        ([500], [], "no depths to test"),
    ],
)
def test_probe_refuses_what_it_cannot_measure(builder, lengths, depths, message):
    """No tests behind a result: depths=[] gave accuracy [nan] and the longest length as the effective length."""
    with pytest.raises(FreqlabError, match=message):
        probe(lambda batch, n: [""] * len(batch), builder, lengths, depths)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"trials": 2.5}, "trials must be a whole number >= 1, got 2.5"),
        ({"trials": "3"}, "trials must be a whole number >= 1, got '3'"),
        ({"need": 1.5}, "need must be a whole number >= 1, got 1.5"),
        ({"batch_size": 0}, "batch_size must be a whole number >= 1, got 0"),
        ({"need": 5}, r"need must be in 1\.\.4, got 5"),
    ],
)
def test_probe_counts_are_whole_numbers(builder, options, message):
    """A review: trials=2.5 was a TypeError deep inside, need=1.5 was reported as "need 1.5"."""
    with pytest.raises(FreqlabError, match=f"^{message}$"):
        probe(lambda batch, n: [""] * len(batch), builder, [500], [0.5], **options)


@pytest.mark.parametrize(
    "plan",
    [
        ("string", (100, 8)),
        ("STRING", (100, 8, 1)),
        ("STRING", 100),
        ("STRING",),
        (["STRING"], (100, 8)),
        ("STRING", "ab"),
    ],
)
def test_probe_settings_names_a_plan_it_cannot_read(builder, tokenizer, plan):
    """A review: ('string', ...) was a KeyError, three values or an unhashable name a TypeError."""
    from freqlab.apply.probe import probe_settings

    with pytest.raises(FreqlabError, match=r"a plan is \('STRING', \(S, W\)\) or \('Self-Extend', \(G, w_n\)\), got"):
        probe_settings(object(), tokenizer, builder, [300], plans=[plan])


@pytest.mark.parametrize(
    "plans", [[("STRING", np.array([100, 8]))], [["Self-Extend", [2, 8]]], (p for p in [("STRING", (100, 8))])]
)
def test_probe_settings_reads_plans_as_sequences_of_two_and_generators_once(builder, tokenizer, plans):
    """A review: numpy values were refused by the first check, and a generator of plans was used up by it (only the
    stock model was probed). Past the plan's check, the object given is no model: said so."""
    from freqlab.apply.probe import probe_settings

    with pytest.raises(FreqlabError, match=r"^expected a loaded transformers model"):
        probe_settings(object(), tokenizer, builder, [300], plans=plans)


def test_probe_tests_the_lengths_in_order(builder, tokenizer):
    result = probe(lambda batch, n: [tokenizer.decode(ids) for ids in batch], builder, [900, 300, 900], [1.0])
    assert result.lengths == (300, 900) and result.effective_length == 900


def test_ruler_command_lists_the_lengths():
    assert ruler_command("m", [8192, 4096, 8192]) == (
        "lm_eval --model hf --model_args pretrained=m,max_length=8192 --tasks ruler "
        "--metadata='{\"max_seq_lengths\":[4096,8192]}' --batch_size 1"
    )


def test_the_report_rounds_accuracy_down_and_says_when_every_length_passed():
    """A review: 100 of 201 tests (49.75%, failing a threshold of 50%) printed as 50%; with every tested length
    passing, the effective length read as the model's limit."""

    def result(passes):
        passes = np.array([passes], dtype=np.int64)
        return ProbeResult("stock", (1000, 2000), (0.0,), passes, 201, 4, 2, 0.5, passes * 2)

    lines = ProbeReport("m", (result([201, 100]),), "lm_eval ...").report().splitlines()
    assert lines[2:4] == ["   1,000   100%", "   2,000    49%"]
    assert lines[4] == "effective length, stock: 1,000"
    lines = ProbeReport("m", (result([201, 101]),), "lm_eval ...").report().splitlines()
    assert lines[3] == "   2,000    50%" and lines[4] == (
        "effective length, stock: 2,000 (every tested length passes: at least this; test longer lengths to find the "
        "limit)"
    )


def test_a_model_of_learned_positions_is_refused_lengths_whose_answer_passes_them(tokenizer):
    """A review: GPT-2 (a table of 256 positions) probed at 240 tokens ran its answer past 256: an IndexError's
    traceback, the lengths tested before it lost. Refused before any test, naming the longest length that fits."""
    import transformers

    from freqlab.apply.probe import hf_generator, probe_settings

    config = transformers.GPT2Config(n_embd=32, n_layer=1, n_head=2, n_positions=256, vocab_size=len(tokenizer))
    model = transformers.GPT2LMHeadModel(config).eval()
    assert hf_generator(model, tokenizer).positions == 256
    builder = hf_builder(tokenizer)
    with pytest.raises(FreqlabError, match=r"^length 240 and up to (\d+) tokens of answer pass the 256 learned "):
        probe_settings(model, tokenizer, builder, [230, 240], [1.0], trials=1)
    llama = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                     max_position_embeddings=256, vocab_size=len(tokenizer))  # fmt: skip
    assert hf_generator(transformers.LlamaForCausalLM(llama), tokenizer).positions is None  # RoPE reads past L


def test_ctrl_c_in_a_later_setting_keeps_the_settings_probed_before_it(tokenizer, monkeypatch):
    """A review: Ctrl-C during the plan's setting lost the stock model's results. It is a KeyboardInterrupt still
    (the command exits 130 after printing them), carrying the settings probed in full."""
    import transformers

    import freqlab.apply.probe as probing

    llama = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                     max_position_embeddings=512, vocab_size=len(tokenizer))  # fmt: skip
    model = transformers.LlamaForCausalLM(llama).eval()
    real, calls = probing.probe, []

    def interrupted_second(*args, **kwargs):
        calls.append(kwargs["label"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(probing, "probe", interrupted_second)
    builder = hf_builder(tokenizer)
    with pytest.raises(probing.ProbeInterrupted) as stopped:
        probing.probe_settings(model, tokenizer, builder, [240], [1.0], plans=[("STRING", (200, 16))], trials=1)
    assert isinstance(stopped.value, KeyboardInterrupt) and calls == ["stock", "STRING 200,16"]
    assert [r.label for r in stopped.value.results] == ["stock"]
    found = stopped.value.results[0].effective_length  # a random model's: none, said as the report says it
    said = f"{found:,}" if found else "below the shortest tested length (240)"
    assert str(stopped.value) == f"interrupted (probed in full before it: stock: effective length {said})"
    assert model.config._attn_implementation != "freqlab_string"  # the plan taken off
    calls.clear()
    monkeypatch.setattr(probing, "probe", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt) as first:  # nothing probed yet: the interrupt as it came
        probing.probe_settings(model, tokenizer, builder, [240], [1.0], trials=1)
    assert type(first.value) is KeyboardInterrupt


def test_a_table_of_positions_found_while_generating_is_one_line_naming_them(tokenizer):
    """An adversary: CodeGen's rotary embedding reads a fixed sin/cos table of 256 positions: an IndexError's
    traceback past them. A failure past the model's positions (not out of memory) names them."""
    import transformers

    from freqlab.apply.probe import hf_generator

    config = transformers.CodeGenConfig(n_embd=32, n_layer=1, n_head=2, rotary_dim=8, n_positions=256,
                                        n_ctx=256, vocab_size=len(tokenizer))  # fmt: skip
    generate = hf_generator(transformers.CodeGenForCausalLM(config).eval(), tokenizer)
    assert generate.positions is None and len(generate([[5] * 200], 4)) == 1  # within its table: runs
    with pytest.raises(FreqlabError, match=r"^length 250 and up to 8 tokens of answer pass the 256 positions of Co"):
        generate([[5] * 250], 8)
