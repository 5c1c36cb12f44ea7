"""The README's Python examples run and print what they claim."""

import doctest
import importlib.util
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
APPLY_SECTION = "## From a scan to a running model"  # its examples build tiny torch models (the apply extra)


def readme_text(with_apply: bool) -> str:
    """The README; without the apply extra, less the section whose examples need torch and transformers."""
    text = README.read_text()
    if with_apply:
        return text
    start = text.index(APPLY_SECTION)
    end = text.find("\n## ", start + 1)
    return text[:start] + (text[end:] if end >= 0 else "")


def test_readme_examples():
    with_apply = all(importlib.util.find_spec(name) for name in ("torch", "transformers"))
    text = readme_text(with_apply)
    test = doctest.DocTestParser().get_doctest(text, {"__name__": "README"}, "README.md", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test)
    assert result.attempted > 0 and result.failed == 0
    if not with_apply:
        pytest.skip(f"{result.attempted} README examples passed; the apply section's need torch and transformers")


def test_the_apply_section_is_the_only_one_left_out_without_torch():
    full, less = readme_text(True), readme_text(False)
    assert APPLY_SECTION in full and APPLY_SECTION not in less
    assert "import torch" in full and "import torch" not in less
