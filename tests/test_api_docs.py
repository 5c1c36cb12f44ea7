"""Every name of freqlab's top-level API has a numpy-style docstring (issue 24): a one-line summary, Parameters,
Returns (functions), Notes with the formula and References (title, venue, arXiv id) where a paper applies, and
Examples that run."""

import doctest
import importlib
import inspect
import pathlib
import re

import pytest

import freqlab

STRING = ("Why Does the Effective Context Length of LLMs Fall Short?", "ICLR 2025", "arXiv:2410.18745")
SELF_EXTEND = ("LLM Maybe LongLM: Self-Extend LLM Context Window Without Tuning", "ICML 2024", "arXiv:2401.01325")
HARPE = ("Breaking the Stage Barrier", "COLING 2025", "arXiv:2412.07171")
ATTENTION_BUCKETS = ("Fortify the Shortest Stave in Attention", "ACL 2024", "arXiv:2312.04455")
YARN = ("YaRN: Efficient Context Window Extension of Large Language Models", "ICLR 2024", "arXiv:2309.00071")
GIRAFFE = ("Giraffe: Adventures in Expanding Context Lengths in LLMs", "2023", "arXiv:2308.10882")

#: the papers each name implements or reads its numbers from
PAPERS = {
    "LengthHistogram": [STRING],
    "PositionFrequency": [STRING],
    "position_frequency": [STRING],
    "segments": [STRING],
    "effective_length": [STRING],
    "tokens_needed": [STRING],
    "scale_to_budget": [STRING],
    "share_at_most": [STRING],
    "share_at_least": [STRING],
    "position_at_mass": [STRING],
    "frequency_key_numbers": [STRING],
    "regime_rows": [STRING],
    "describe": [STRING],
    "well_trained_range": [STRING],
    "plan_string": [STRING],
    "plan_upsample": [STRING],
    "plan_self_extend": [SELF_EXTEND],
    "evaluate_self_extend": [SELF_EXTEND],
    "peak_valley_search": [HARPE, ATTENTION_BUCKETS],
    "uniform_plan": [HARPE, ATTENTION_BUCKETS],
    "compare_sets": [HARPE, ATTENTION_BUCKETS],
    "plan_rope_scaling": [YARN, GIRAFFE],
}

#: numpy's section order (https://numpydoc.readthedocs.io/en/latest/format.html)
ORDER = ("Parameters", "Returns", "Raises", "Notes", "References", "Examples")

API = sorted(name for name in freqlab._EXPORTS if callable(getattr(freqlab, name)))


def sections(doc: str) -> dict[str, str]:
    """Numpy sections of a docstring: a title line underlined with as many dashes -> the text below it."""
    lines = doc.splitlines()
    found, current = {}, None
    for k, line in enumerate(lines):
        if k + 1 < len(lines) and line.strip() and lines[k + 1].strip() == "-" * len(line.strip()):
            current = line.strip()
            found[current] = []
        elif current is not None and not re.fullmatch(r"-+", line.strip()):
            found[current].append(line)
    return {title: "\n".join(body) for title, body in found.items()}


def parameters(obj) -> list[str]:
    if inspect.isclass(obj) and issubclass(obj, Exception):
        return ["message"]
    return [name for name in inspect.signature(obj).parameters if name != "self"]


def documented_parameters(text: str) -> set[str]:
    """Names of the entries of a Parameters section (``a, b : type`` lines, not indented)."""
    names = set()
    for line in text.splitlines():
        if line and not line.startswith(" "):
            names.update(name.strip().lstrip("*") for name in line.split(" : ")[0].split(","))
    return names


def test_the_api_is_the_exports_table():
    assert len(API) == 30
    assert set(freqlab._EXPORTS) - set(API) == {"DEFAULT_TAU", "REGIMES"}  # constants, documented in their modules


@pytest.mark.parametrize("name", API)
def test_numpy_sections_in_order(name):
    obj = getattr(freqlab, name)
    doc = inspect.getdoc(obj)
    summary = doc.splitlines()[0]
    assert summary.strip() and len(summary) <= 116  # one line that fits the 120-column source with its indent
    found = sections(doc)
    assert "Examples" in found and ">>>" in found["Examples"]
    if parameters(obj):
        assert "Parameters" in found
        assert set(parameters(obj)) <= documented_parameters(found["Parameters"])
    if not inspect.isclass(obj):
        assert "Returns" in found and found["Returns"].strip()
    known = [title for title in found if title in ORDER]
    assert known == sorted(known, key=ORDER.index)


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_papers_cited_by_title_venue_and_arxiv_id(name):
    found = sections(inspect.getdoc(getattr(freqlab, name)))
    assert "Notes" in found and "=" in found["Notes"]  # the formula
    references = " ".join(found["References"].split())
    for title, venue, arxiv in PAPERS[name]:
        assert title in references and venue in references and arxiv in references


@pytest.mark.parametrize("name", API)
def test_examples_run(name):
    obj = getattr(freqlab, name)
    module = importlib.import_module(obj.__module__)
    tests = doctest.DocTestFinder(recurse=False).find(obj, name, globs=vars(module).copy())
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


def test_no_citation_by_seed_number():
    root = pathlib.Path(freqlab.__file__).parent
    hits = [f"{p}:{k}" for p in root.rglob("*.py") for k, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"seeds?[ /]?00\d", line)]  # fmt: skip
    assert hits == []
