"""The scan report says what was counted: special tokens only when the tokenizer adds some."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from freqlab.scan import scan

VOCAB = {"[UNK]": 0, "<s>": 1, "</s>": 2, "a": 3, "b": 4}


@pytest.mark.parametrize(
    ("post_processor", "added", "note"),
    [
        (False, 0, "--add-special-tokens: none added (the tokenizer has no post-processor adding any)"),
        (True, 2, "special tokens counted: 2 per document"),
    ],
)
def test_add_special_tokens_says_how_many_were_added(tmp_path, post_processor, added, note):
    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    if post_processor:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)]
        )
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["a b a", "b"]), encoding="utf-8")
    result = scan(
        str(data), tokenizer=str(tmp_path / "tokenizer.json"), add_special_tokens=True, workers=1, progress=False
    )
    assert result.histogram.tokens == 4 + 2 * added  # "a b a" and "b", plus <s> and </s> each when added
    assert result.summary["tokenizer"]["special_tokens_added"] == added
    assert note in result.report()
    assert "special tokens counted" not in result.report() or added
