"""A source field is a choice the user made: one that no document has is an error naming it and the fields the
first record has; documents without it among labelled ones are counted under ``(none)``, and the report says so."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from freqlab.cli import main
from freqlab.errors import FreqlabError
from freqlab.scan import scan

RECORDS = [
    {"text": "alpha beta", "meta": {"set": "Books", "id": 1}},
    {"text": "gamma delta epsilon", "meta": {"id": 2}},
    {"text": "zeta", "meta": {"set": "Web", "id": 3}},
    {"text": "eta theta"},
]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    return path


def test_a_source_field_no_document_has_is_an_error_naming_the_fields_of_the_first_record(corpus, tmp_path):
    message = (
        r"source field 'meta.nope': no document has it \(all 4 documents read would be '\(none\)'\); "
        r"fields of the first record: text, meta.set, meta.id; give a field they have \(--source-field\), "
        r"or --source-field '' for no split"
    )
    with pytest.raises(FreqlabError, match=message):
        scan(str(corpus), source_field="meta.nope", workers=1, progress=False)
    result = CliRunner().invoke(
        main, ["scan", "--dataset", str(corpus), "--source-field", "meta.nope", "-q", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 1 and result.output.count("\n") == 1 and result.output.startswith("Error: ")
    assert not (tmp_path / "out" / "lengths.parquet").exists()


def test_parquet_names_its_columns(tmp_path):
    pq.write_table(pa.table({"content": ["a b", "c"], "lang": ["en", "de"]}), tmp_path / "t.parquet")
    with pytest.raises(FreqlabError, match=r"fields of the first record: content, lang;"):
        scan(str(tmp_path / "t.parquet"), text_field="content", source_field="language", workers=1, progress=False)


def test_documents_without_the_field_are_counted_under_none_and_the_report_says_so(corpus):
    result = scan(str(corpus), source_field="meta.set", workers=1, progress=False)
    sources = {name: h.documents for name, h in result.histogram.sources.items()}
    assert sources == {"Books": 1, "Web": 1, "(none)": 2}
    assert "(none): documents without the source field 'meta.set'" in result.report()


def test_odd_source_names_keep_the_table_in_columns(tmp_path):
    """A review: a 500-character name widened the table past the screen, "" and "   " were two blank rows, and a
    wide (CJK) name slid the columns after it. Names are escaped, cut to 40 characters and quoted when blank, and
    padded by terminal columns."""
    names = ["x" * 500, "", "   ", "日本語", "rtl\u202eab", "esc\x1b[31m"]
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps({"text": "alpha beta", "src": n}) + "\n" for n in names), encoding="utf-8")
    report = scan(str(path), source_field="src", workers=1, progress=False).report()
    lines = report.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("source "))
    table = lines[start : start + 1 + len(names)]
    from freqlab.display import columns

    assert len({columns(line) for line in table}) == 1, table  # every row as wide, in terminal columns
    for name in ["x" * 20 + "…" + "x" * 19, "''", "'   '", "日本語", "rtl\\u202eab", "esc\\x1b[31m"]:
        assert sum(line.startswith(f"{name}  ") for line in table[1:]) == 1, (name, table)
