"""docs/layout.md tells a contributor which files to touch: every file and folder it names must
be there, or the page sends people to code that moved."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "layout.md"
# A name in backticks that is a path in the tree: it has a folder, or a file's ending.
PATH = re.compile(r"`([\w./-]+(?:/|\.py|\.md))`")


def named_paths():
    return sorted({m for m in PATH.findall(PAGE.read_text()) if "<" not in m})


def test_the_layout_page_names_files():
    assert len(named_paths()) > 20


def test_every_file_the_layout_page_names_exists():
    # Names of a module inside an app (`models.py`) stand for each app's own: they are not paths.
    missing = [p for p in named_paths() if "/" in p and not (ROOT / p).exists()]
    assert missing == []


def test_every_module_name_of_the_naming_rule_is_used_by_some_app():
    table = PAGE.read_text().split("## Module names", 1)[1].split("\n## ", 1)[0]
    names = {m for m in re.findall(r"`(\w+\.py)`", table)}
    used = {p.name for p in (ROOT / "console").rglob("*.py")}
    assert names - used == set()
