"""The JSON-lines reader parses with orjson when orjson takes a line, and with the standard library otherwise: both
paths must give the same record for every line, whatever the line holds (hypothesis generates hostile ones)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freqlab.corpus import open_corpus
from freqlab.corpus.fields import Fields
from freqlab.corpus.jsonl import parse_line

FIELDS = Fields("text", "meta.set")

values = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2),
    st.integers(min_value=-(10**30), max_value=10**30),  # past 64 bits, orjson would round
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


@st.composite
def lines(draw) -> bytes:
    record = {}
    if draw(st.booleans()):
        record["text"] = draw(values)
    if draw(st.booleans()):
        record["meta"] = {"set": draw(values)} if draw(st.booleans()) else json.dumps({"set": draw(values)})
    text = json.dumps(record, ensure_ascii=draw(st.booleans()))  # NaN, Infinity, lone \ud800 escapes included
    raw = text.encode("utf-8", "surrogatepass")  # raw lone surrogates too: invalid UTF-8
    damage = draw(st.sampled_from(["none", "cut", "byte", "list"]))
    if damage == "cut" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    elif damage == "byte":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at:]
    elif damage == "list":
        raw = b"[" + raw + b"]"
    return raw.replace(b"\n", b"\\n").replace(b"\r", b"")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(lines(), min_size=1, max_size=8))
def test_the_fast_path_and_the_standard_library_give_the_same_records(tmp_path, batch):
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in batch))
    extract = FIELDS.extractor()
    expected = [parse_line(line, extract) for line in batch if line.strip()]
    docs = list(open_corpus(str(path), text_field="text", source_field="meta.set").documents())
    assert [(d.text, d.source, d.error) for d in docs] == expected


def test_a_numeric_source_label_past_64_bits_is_exact():
    line = b'{"text": "t", "meta": {"set": 123456789012345678901234567890}}'
    assert parse_line(line, FIELDS.extractor()) == ("t", "123456789012345678901234567890", None)


def test_an_integer_past_4300_digits_is_valid_json_not_a_malformed_line(tmp_path):
    """A review: an ``id`` of 5,000 digits beside the text made the line malformed-json (Python's limit on converting
    digits to int): the text is counted, and such a label is its digits."""
    big, negative = "9" * 5000, "-" + "1" * 6000
    path = tmp_path / "big.jsonl"
    path.write_text(f'{{"text": "hello", "id": {big}}}\n{{"text": "again", "meta": {{"set": {negative}}}}}\n')
    docs = list(open_corpus(str(path), text_field="text", source_field="meta.set").documents())
    assert [(d.text, d.source, d.error) for d in docs] == [("hello", "(none)", None), ("again", negative, None)]


def test_a_text_of_4300_digits_or_more_is_said_to_be_a_number(tmp_path):
    """An adversary: such a text field said "holds Decimal", the parser's class, not what the line holds."""
    path = tmp_path / "n.jsonl"
    path.write_text('{"text": -' + "9" * 5000 + "}\n")
    (doc,) = open_corpus(str(path)).documents()
    assert (doc.error, doc.detail) == (
        "non-string-text",
        "the text field holds a number of 5,000 digits, -" + "9" * 19 + "…",
    )
