"""The README and docs/ cannot go stale: the README's length, its workload table against the registries,
every flag it and the docs put on a command line against the real parsers, every relative link and
anchor, the example workload files against the reader, and the reference figures against their source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [README, *DOCS]
MAX_README_LINES = 200


def page_id(p: Path) -> str:
    return p.name if p == README else p.relative_to(ROOT).as_posix()


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def section(doc: str, heading: str) -> str:
    """The text under a ``## heading`` up to the next ``## ``."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    assert match, f"README has no section {heading!r}"
    return match.group(1)


def table_rows(block: str) -> list[list[str]]:
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in block.splitlines()
        if line.startswith("|")
    ]
    return [r for r in rows[2:]]  # past the header and its rule


def test_the_readme_fits_on_a_few_screens():
    assert len(text(README).splitlines()) <= MAX_README_LINES


def test_the_readme_sections_come_in_the_order_a_newcomer_reads_them():
    headings = re.findall(r"^## (.+)$", text(README), re.M)
    order = [
        "What you get",
        "Quick start",
        "Your GPU and your model",
        "Your own server",
        "The workloads",
        "Your own workload",
        "How it is measured",
        "Reference results",
        "The ten flags that matter, and the exit codes",
        "When to use this, and when another tool",
        "File map",
        "Documentation",
        "Licence",
    ]
    assert [h for h in headings if h in order] == order


def test_the_workload_table_lists_exactly_the_registered_kinds_and_built_ins():
    from llm_call_anatomy.reports import kinds as report_kinds
    from llm_call_anatomy.workloads import kinds as workload_kinds
    from llm_call_anatomy.workloads.catalog import BUILTIN

    rows = table_rows(section(text(README), "The workloads"))
    kinds = [r[0].strip("`") for r in rows]
    assert sorted(kinds) == sorted(workload_kinds.names()) == sorted(report_kinds.names())
    # a kind that ships no built-in (trace: it needs the user's trace) says so in words, without a name in ``
    builtins = [m.group(1) for r in rows if (m := re.match(r"`([^`]+)`", r[1]))]
    assert sorted(builtins) == sorted(BUILTIN)


NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_counts_of_kinds_and_built_ins_are_the_registries(page):
    """ "Five kinds", "all five built-in workloads": a count of kinds or of built-ins is the registry's
    ("the four batch-1 workloads" of a past run is a fact about that run, not a count of the registry)."""
    from llm_call_anatomy.workloads import kinds
    from llm_call_anatomy.workloads.catalog import BUILTIN

    said = re.findall(r"\b(\w+) (?:built-in |workload )?(kinds|built-in workloads)\b", text(page), re.I)
    for word, what in said:
        if word.lower() in NUMBERS:
            expected = len(kinds.names()) if what.lower() == "kinds" else len(BUILTIN)
            assert NUMBERS[word.lower()] == expected, f"{page.name}: '{word} ... {what}'"


def test_help_names_every_built_in_workload():
    from llm_call_anatomy.harness.cli import parser
    from llm_call_anatomy.workloads.catalog import BUILTIN

    help_text = " ".join(parser().format_help().split())
    for name in BUILTIN:
        assert f"{name} (" in help_text, name  # described in the epilog
    assert f"all {len(BUILTIN)}" in help_text and "four" not in help_text


def _options(p) -> set[str]:
    return {o for a in p._actions for o in a.option_strings}


def compare_options() -> set[str]:
    from llm_call_anatomy.harness.cli import parser

    return _options(parser())


def report_options() -> set[str]:
    import argparse

    from llm_call_anatomy.reports import __main__ as cli

    seen: dict[str, argparse.ArgumentParser] = {}
    real = argparse.ArgumentParser.parse_args

    def capture(self, args=None, namespace=None):
        seen["p"] = self
        raise SystemExit(0)

    argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
    try:
        with pytest.raises(SystemExit):
            cli.main([])
    finally:
        argparse.ArgumentParser.parse_args = real  # type: ignore[method-assign]
    return _options(seen["p"])


def test_the_ten_flags_exist():
    rows = table_rows(section(text(README), "The ten flags that matter, and the exit codes"))
    flags = [r[0].strip("`") for r in rows]
    assert len(flags) == 10 and set(flags) <= compare_options()
    from llm_call_anatomy.backends import ALL, REGISTRY

    backend = next(r[1] for r in rows if r[0] == "`--backend`")
    assert f"`{','.join(ALL)}`" in backend and all(f"`{b}`" in backend or b in ALL for b in REGISTRY)


def command_lines(doc: str) -> list[tuple[str, str]]:
    """(tool, its arguments) for every ``compare.py`` / ``compare.py report`` invocation written out in a
    page."""
    out = []
    for line in doc.replace("\\\n", " ").splitlines():
        for m in re.finditer(r"(compare\.py report(?![\w-])|compare\.py)([^\n`#|]*)", line):
            out.append(("reports" if m.group(1).endswith("report") else "compare", m.group(2)))
    return out


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_flag_on_a_command_line_exists(page):
    known = {"compare": compare_options(), "reports": report_options()}
    unknown = []
    for tool, args in command_lines(text(page)):
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", args):
            if flag not in known[tool]:
                unknown.append(f"{tool}: {flag} in {args.strip()!r}")
    assert unknown == []


OTHER_TOOLS = re.compile(
    r"vllm serve|python -m sglang|pip install|docker |transformers serve|<!-- load_table: "
)


def test_every_flag_the_readme_names_exists():
    """Prose included ("`--lint-only` also checks..."): a flag the README names is compare.py's or the
    report's, unless its line runs another tool (``vllm serve --port``)."""
    known = compare_options() | report_options()
    unknown = [
        f"{flag}: {line.strip()}"
        for line in text(README).splitlines()
        if not OTHER_TOOLS.search(line)
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line)
        if flag not in known
    ]
    assert unknown == []


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = re.sub(r"[`*]", "", heading.strip().lower())  # GitHub keeps underscores (ignore_eos)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text(path), re.M)}


LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_resolves(page):
    broken = []
    for target in LINK.findall(text(page)):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    assert broken == []


def test_the_docs_index_lists_every_page():
    """docs/README.md is the index by purpose: every page under docs/ is linked from it, by its folder."""
    index = text(ROOT / "docs" / "README.md")
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in DOCS]
    missing = [p for p in pages if p != "README.md" and f"]({p})" not in index]
    assert missing == []


def yaml_blocks(doc: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", doc, re.S)


WORKLOADS_PAGE = ROOT / "docs" / "guides" / "workloads.md"


@pytest.mark.parametrize("page,all_kinds", [(README, False), (WORKLOADS_PAGE, True)])
def test_the_example_workload_files_load(tmp_path, page, all_kinds):
    from llm_call_anatomy.workloads import kinds
    from llm_call_anatomy.workloads.reader import read_workload_file

    blocks = yaml_blocks(text(page))
    assert blocks, f"{page.name} has no yaml example"
    path = tmp_path / "example.yaml"
    path.write_text(blocks[0])
    specs = read_workload_file(path)
    if all_kinds:  # "one workload of each kind"
        assert sorted({s.kind for s in specs}) == sorted(kinds.names())


def results_sources() -> str:
    """What a results table may quote: lab/h200-results.md and the READMEs of the example runs and of
    each sitting's results."""
    lab = ROOT / "lab"
    readmes = [*(lab / "examples").glob("*/README.md"), *(lab / "results").glob("*/README.md")]
    return text(lab / "h200-results.md") + "".join(text(p) for p in readmes)


def assert_figures_quoted(rows: list[list[str]], sources: str) -> None:
    for row in rows:
        for figure in re.findall(r"\d[\d,]*\.\d+(?:–\d[\d,]*\.\d+)?|\d{1,3}(?:,\d{3})+|\d{2,}", row[2]):
            assert figure in sources, f"{figure} ({row[0]}) is not in the results it links to"


def test_the_reference_figures_are_the_committed_runs():
    """The README's results table is the current one (two rows; the sitting log is lab/sittings.md), and
    every number in it is quoted from the results it links to."""
    # the hand-written table; the generated block after it (<!-- load_table: ... -->) is checked against its
    # command in lab/tests/test_results_tables.py
    written = section(text(README), "Reference results").split("<!-- load_table: ")[0]
    rows = table_rows(written)
    assert len(rows) == 2
    assert_figures_quoted(rows, results_sources())
