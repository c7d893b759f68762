"""issue 43: a docs page is linked where the reader can open it: from a checkout the relative path, from an
installed wheel (no docs/) the project's URL from its metadata, or, with no URL, where the page lives."""

from __future__ import annotations

from email.message import Message

from llm_call_anatomy.contract import docs


def _metadata(*urls: str):
    msg = Message()
    for u in urls:
        msg["Project-URL"] = u
    return lambda _dist: msg


def _installed(monkeypatch, tmp_path, *urls: str) -> None:
    docs.base_url.cache_clear()
    monkeypatch.setattr(docs, "CHECKOUT_DOCS", tmp_path / "no-docs-here")
    monkeypatch.setattr(docs.metadata, "metadata", _metadata(*urls))


def test_a_checkout_links_its_own_docs_folder():
    assert docs.CHECKOUT_DOCS.is_dir()
    assert docs.doc("explanation/capacity.md") == "docs/explanation/capacity.md"


def test_an_installed_copy_links_the_repository(monkeypatch, tmp_path):
    _installed(monkeypatch, tmp_path, "Repository, https://example.org/o/llm-call-anatomy/")
    assert (
        docs.doc("guides/trace.md") == "https://example.org/o/llm-call-anatomy/blob/main/docs/guides/trace.md"
    )
    _installed(monkeypatch, tmp_path, "Repository, https://x/r", "Documentation, https://x/r/docs")
    assert (
        docs.doc("explanation/methodology.md#a-busy-machine")
        == "https://x/r/docs/explanation/methodology.md#a-busy-machine"
    )
    docs.base_url.cache_clear()


def test_with_no_url_the_page_says_where_it_lives(monkeypatch, tmp_path):
    _installed(monkeypatch, tmp_path)
    said = docs.doc("explanation/capacity.md")
    assert said == "docs/explanation/capacity.md in the project's source repository"
    docs.base_url.cache_clear()


def test_help_and_messages_take_their_links_from_one_place():
    """No help text, message or page string names a docs page by hand (docstrings and comments may)."""
    import ast
    from pathlib import Path

    root = Path(docs.__file__).resolve().parent.parent
    found = []
    for folder in ("harness", "backends", "reports", "workloads", "contract"):
        for path in (root / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            documented = {
                id(n.body[0].value)
                for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body
                and isinstance(n.body[0], ast.Expr)
                and isinstance(n.body[0].value, ast.Constant)
            }
            for n in ast.walk(tree):
                text = n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else ""
                if id(n) not in documented and "docs/" in text and ".md" in text and path.name != "docs.py":
                    found.append(f"{path.relative_to(root)}:{n.lineno}")
    assert not found, found


def test_every_page_named_to_doc_exists():
    """``doc(page)`` names a page by its place under docs/ (``explanation/capacity.md``): a page that moves
    takes its callers with it."""
    import ast
    import re
    from pathlib import Path

    root = Path(docs.__file__).resolve().parent.parent
    named = []
    for folder in ("harness", "backends", "reports", "workloads", "contract"):
        for path in (root / folder).rglob("*.py"):
            for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                called = getattr(n, "func", None)
                if (
                    isinstance(n, ast.Call)
                    and getattr(called, "id", getattr(called, "attr", "")) == "doc"
                    and n.args
                    and isinstance(n.args[0], ast.Constant)
                    and isinstance(n.args[0].value, str)
                ):
                    named.append((path.name, n.args[0].value))
    assert len(named) >= 8
    missing = [(f, p) for f, p in named if not (docs.CHECKOUT_DOCS / re.sub(r"#.*", "", p)).is_file()]
    assert not missing, missing
