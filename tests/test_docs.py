"""The API reference (mkdocs.yml, docs/) builds with no warning, documents every public name and shows the
examples that tests/test_docstrings.py and tests/test_api_docs.py run."""

import doctest
import html
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import freqlab
from freqlab.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["top-level", "corpus", "tokenization", "scan", "frequency", "plan", "apply", "plots", "cli"]
PACKAGES = ["corpus", "tokenization", "scan", "frequency", "plan", "apply", "plots"]


def plain_docstrings():
    """docs/plain_docstrings.py, the griffe extension (a build file, not part of the package)."""
    pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("plain_docstrings", ROOT / "docs" / "plain_docstrings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_doctest_block_becomes_a_pycon_code_block():
    text = "Row m of P.\n\n>>> [1, 2][0]\n1\n\nAfter."
    assert plain_docstrings().markdown_docstring(text) == "Row m of P.\n\n```pycon\n>>> [1, 2][0]\n1\n```\n\nAfter."


def test_roles_become_code_and_brackets_outside_code_are_escaped():
    md = plain_docstrings().markdown_docstring
    assert md("P'[m][n] = r, see :func:`plan_string` and ``x[0][1]``") == (
        "P'\\[m]\\[n] = r, see ``plan_string`` and ``x[0][1]``"
    )
    assert md(":class:`~freqlab.frequency.PositionFrequency`") == "``freqlab.frequency.PositionFrequency``"


def test_references_become_one_paragraph_each_and_citations_plain_brackets():
    md = plain_docstrings().markdown_docstring
    text = "f(i) (Eq. 2 [1]_).\n\n.. [1] An et al., STRING,\n       arXiv:2410.18745.\n.. [2] Jin et al."
    assert md(text) == "f(i) (Eq. 2 \\[1]).\n\n\\[1] An et al., STRING,\n       arXiv:2410.18745.\n\n\\[2] Jin et al."


def test_numpy_parameter_lines_literal_blocks_and_fences_are_left_alone():
    md = plain_docstrings().markdown_docstring
    assert md("lengths : list[int]\n    Sizes [tokens].") == "lengths : list[int]\n    Sizes \\[tokens]."
    literal = "Example::\n\n    stages:\n      - [a, b]\n\nEnd [1]."
    assert md(literal) == "Example::\n\n    stages:\n      - [a, b]\n\nEnd \\[1]."
    fenced = "```yaml\nx: [1]\n```"
    assert md(fenced) == fenced


def test_a_constant_is_documented_by_its_comment():
    comment = plain_docstrings().comment_docstring
    lines = ["#: Sphinx style,", "#: two lines.", "A = 1", "B = 2  # trailing", "", "# plain block", "C = 3", "D = 4"]
    assert comment(lines, 3) == "Sphinx style,\ntwo lines."
    assert comment(lines, 4) == "trailing"
    assert comment(lines, 7) == "plain block"
    assert comment(lines, 8) is None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    pytest.importorskip("mkdocs_click")
    out = tmp_path_factory.mktemp("docs") / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr  # strict: any warning fails the build
    return out


def page(site: Path, name: str) -> str:
    return (site / "reference" / name / "index.html").read_text(encoding="utf-8")


def anchors(site: Path) -> set[str]:
    return {m for name in PAGES for m in re.findall(r'id="([^"]+)"', page(site, name))}


def code_blocks(site: Path) -> str:
    """The text of the code blocks of every reference page as a reader sees it (tags dropped, entities decoded,
    spaces collapsed): an example shown as anything else (say, as nested quotes) is not in it."""
    blocks = [block for name in PAGES for block in re.findall(r"<pre>.*?</pre>", page(site, name), re.DOTALL)]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", " ".join(blocks))).split())


@pytest.mark.slow
def test_every_page_is_built(site):
    assert (site / "index.html").is_file()
    assert "A model trained with window L" in (site / "guide" / "index.html").read_text(encoding="utf-8")
    for name in PAGES:
        assert (site / "reference" / name / "index.html").is_file(), name


@pytest.mark.slow
def test_every_top_level_name_is_documented_and_listed(site):
    ids = anchors(site)
    top = page(site, "top-level")
    for name, module in freqlab._EXPORTS.items():
        assert f"{module}.{name}" in ids, name  # its entry, on the page of its module group
        assert f'href="../{PAGES_OF[module.split(".")[1]]}/#{module}.{name}"' in top, name


#: top-level module -> the page that documents it
PAGES_OF = {**{p: p for p in PACKAGES}, "histogram": "frequency", "sizes": "frequency", "errors": "frequency"}


@pytest.mark.slow
@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_of_a_subpackage_is_documented(site, package):
    ids = anchors(site)
    module = importlib.import_module(f"freqlab.{package}")
    assert [name for name in module.__all__ if f"freqlab.{package}.{name}" not in ids] == []


def examples(obj) -> list[str]:
    """The sources of ``obj``'s doctest examples (a class: with its methods')."""
    finder = doctest.DocTestFinder(recurse=isinstance(obj, type))
    return [example.source.strip() for test in finder.find(obj, globs={}) for example in test.examples]


@pytest.mark.slow
def test_the_examples_the_tests_run_are_shown(site):
    text = code_blocks(site)
    objects = [getattr(freqlab, name) for name in freqlab.__all__ if callable(getattr(freqlab, name))]
    for package in PACKAGES:
        module = importlib.import_module(f"freqlab.{package}")
        objects += [module, *(getattr(module, name) for name in module.__all__ if callable(getattr(module, name)))]
    shown = [source for obj in objects for source in examples(obj)]
    assert len(shown) > 150  # 190 on 2026-11-24: the finder found them
    lines = [line for source in shown for line in source.splitlines() if line.strip()]  # shown after >>> or ...
    assert [line for line in lines if " ".join(line.split()) not in text] == []


@pytest.mark.slow
def test_the_command_line_page_has_every_command(site):
    ids = anchors(site)
    assert {f"freqlab-{name}" for name in COMMANDS} <= ids
    assert {"freqlab-plan-string", "freqlab-plan-self-extend", "freqlab-plot-frequency"} <= ids
    assert "--regime" in page(site, "cli")


def test_the_home_pages_links_into_the_guide_name_its_headings():
    """A new user: the Scanning link pointed at a heading renamed since (mkdocs reports a missing anchor at INFO
    level only, so the strict build passed). The anchors as mkdocs makes them (toc's slugify)."""

    def slug(heading: str) -> str:
        return re.sub(r"\s+", "-", re.sub(r"[^\w\- ]", "", heading.lower()).strip())

    headings = {
        slug(line.lstrip("#")) for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("#")
    }
    anchors = re.findall(r"guide\.md#([\w-]+)", (ROOT / "docs" / "index.md").read_text())
    assert anchors and [a for a in anchors if a not in headings] == []
