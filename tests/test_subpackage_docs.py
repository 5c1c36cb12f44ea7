"""The functions and classes of every subpackage's ``__all__`` have numpy-style docstrings (issue 24): a summary,
Parameters naming every parameter (classes: Parameters or Attributes), Returns for a function that returns
something, and References (title, venue, arXiv id) wherever a docstring cites a paper's venue. The top-level names
are held to more in tests/test_api_docs.py.

``NOT_YET`` lists the names still missing their Parameters/Returns sections (2026-11-24): it may only shrink. A
name that gets its sections must leave the list (the test says so), and no new name may join it."""

import importlib
import inspect
import re

import pytest
from test_api_docs import documented_parameters, parameters, sections

import freqlab

PACKAGES = ["corpus", "tokenization", "scan", "frequency", "plan", "apply", "plots"]
VENUES = re.compile(r"\b(ICLR|ICML|NeurIPS|COLING|ACL|EMNLP) 20\d\d\b")

NOT_YET = {
    "corpus.Corpus", "corpus.Preset",
    "tokenization.TokenCounter", "tokenization.load_tokenizer",
    "scan.ReportOptions", "scan.RunOptions", "scan.ScanSettings", "scan.ShardCount", "scan.ShardOptions",
    "scan.count_shard", "scan.format_report", "scan.scan_from_settings", "scan.budget_and_windows",
    "frequency.Schedule", "frequency.Stage",
    "plan.HarpePlan", "plan.RopeScalingPlan", "plan.SelfExtendCheck", "plan.SelfExtendPlan",
    "plan.StringPlan", "plan.UpsamplePlan",
}  # fmt: skip


def public_callables():
    """``package.name`` -> object, for the callables of each subpackage's ``__all__`` that are not top-level names
    (those are checked by tests/test_api_docs.py)."""
    found = {}
    for package in PACKAGES:
        module = importlib.import_module(f"freqlab.{package}")
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and name not in freqlab._EXPORTS:
                found[f"{package}.{name}"] = obj
    return found


NAMES = sorted(public_callables())


def missing_sections(obj) -> list[str]:
    """The numpy sections ``obj``'s docstring lacks."""
    found = sections(inspect.getdoc(obj) or "")
    missing = []
    given = parameters(obj)
    listed = found.get("Parameters", "") + "\n" + (found.get("Attributes", "") if inspect.isclass(obj) else "")
    if given and not set(given) <= documented_parameters(listed):
        missing.append("Parameters")
    returns = None if inspect.isclass(obj) else inspect.signature(obj).return_annotation
    if returns not in (None, "None", inspect.Signature.empty) and "Returns" not in found:
        missing.append("Returns")
    return missing


@pytest.mark.parametrize("name", NAMES)
def test_a_summary_line(name):
    doc = inspect.getdoc(public_callables()[name])
    assert doc and doc.splitlines()[0].strip()


@pytest.mark.parametrize("name", sorted(set(NAMES) - NOT_YET))
def test_parameters_and_returns(name):
    assert missing_sections(public_callables()[name]) == []


def test_the_list_of_names_not_yet_documented_only_shrinks():
    assert set(NAMES) >= NOT_YET  # a name that left an __all__ leaves the list too
    done = sorted(name for name in NOT_YET if not missing_sections(public_callables()[name]))
    assert done == [], f"documented now: remove them from NOT_YET: {done}"


@pytest.mark.parametrize("name", NAMES)
def test_a_cited_paper_is_in_references_with_its_arxiv_id(name):
    doc = inspect.getdoc(public_callables()[name]) or ""
    if VENUES.search(doc):
        references = sections(doc).get("References", "")
        assert VENUES.search(references) and re.search(r"arXiv:\d{4}\.\d{4,5}", references)
