"""Presets are data (freqlab/data/presets.json); field paths reach into objects and into JSON-string objects."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from freqlab.corpus import MISSING_SOURCE, PRESETS, Fields


def test_presets_are_the_data_file():
    raw = json.loads(resources.files("freqlab").joinpath("data/presets.json").read_text(encoding="utf-8"))
    assert list(PRESETS) == list(raw)
    for name, entry in raw.items():
        preset = PRESETS[name]
        assert (preset.id, preset.config, preset.text_field, preset.source_field) == (
            entry["id"],
            entry["config"],
            entry["text_field"],
            entry["source_field"],
        )
        assert preset.note  # each preset documents itself


def test_the_well_known_presets():
    table = {name: (p.id, p.text_field, p.source_field) for name, p in PRESETS.items()}
    assert table["slimpajama"] == ("cerebras/SlimPajama-627B", "text", "meta.redpajama_set_name")
    assert table["slimpajama-6b"] == ("DKYoon/SlimPajama-6B", "text", "meta.redpajama_set_name")
    assert table["redpajama-1t-sample"] == ("togethercomputer/RedPajama-Data-1T-Sample", "text", None)
    assert table["fineweb"] == ("HuggingFaceFW/fineweb", "text", None)
    assert table["fineweb-edu"] == ("HuggingFaceFW/fineweb-edu", "text", None)
    assert table["pile"] == (None, "text", "meta.pile_set_name")
    assert table["pile-uncopyrighted"] == ("monology/pile-uncopyrighted", "text", "meta.pile_set_name")


SLIM = Fields("text", "meta.redpajama_set_name")


@pytest.mark.parametrize(
    ("record", "result"),
    [
        ({"text": "a", "meta": {"redpajama_set_name": "RedPajamaBook"}}, ("a", "RedPajamaBook", None)),
        ({"text": "a", "meta": '{"redpajama_set_name": "RedPajamaBook"}'}, ("a", "RedPajamaBook", None)),
        ({"text": "", "meta": {"redpajama_set_name": "RedPajamaBook"}}, ("", "RedPajamaBook", None)),
        ({"text": "a", "meta": {}}, ("a", MISSING_SOURCE, None)),
        ({"text": "a", "meta": "not json"}, ("a", MISSING_SOURCE, None)),
        ({"text": "a", "meta": {"redpajama_set_name": None}}, ("a", MISSING_SOURCE, None)),
        ({"text": "a", "meta": {"redpajama_set_name": 7}}, ("a", "7", None)),
        ({"text": "a", "meta": {"redpajama_set_name": {"x": 1}}}, (None, None, "non-string-source")),
        ({"meta": {"redpajama_set_name": "X"}}, (None, None, "missing-text-field")),
        ({"text": None}, (None, None, "null-text")),
        ({"text": ["a"]}, (None, None, "non-string-text")),
        ({"text": "a", "meta.redpajama_set_name": "Flat"}, ("a", "Flat", None)),  # a literal dotted key
    ],
)
def test_slimpajama_field_mapping(record, result):
    assert SLIM.extract(record) == result


def test_nested_text_field_and_columns():
    fields = Fields("doc.body", "meta.pile_set_name")
    assert fields.columns == ("doc.body", "doc", "meta.pile_set_name", "meta")  # a column named "doc.body" too
    assert fields.extract({"doc": {"body": "x"}, "meta": {"pile_set_name": "ArXiv"}}) == ("x", "ArXiv", None)
    assert fields.extract({"doc": '{"body": "y"}', "meta": {"pile_set_name": "ArXiv"}}) == ("y", "ArXiv", None)
    assert Fields().extract({"text": "t", "meta": {}}) == ("t", None, None)  # no source field: no label
