"""The documentation site (mkdocs.yml, docs/) builds with --strict, and says what the code does:
every setting read from the environment, every management command, the API's current schema.
The README stays a short front door."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# How console/settings.py reads a variable: its helpers, the key files, or os.environ itself.
_READ = re.compile(
    r"\b(?:env(?:bool|int|path|choice|oneof|rate)|_key|os\.environ\.get|os\.getenv)\(\s*\"([A-Z][A-Z0-9_]*)\""
)


def test_the_site_builds_with_strict_links(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").exists()
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "/api/v1/poison-list/check" in api


def test_the_readme_is_a_short_front_door():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    assert len(readme.splitlines()) <= 200
    assert "make run" in readme and "make test" in readme


def test_the_readme_links_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#]+)", readme)

    assert targets
    assert [t for t in targets if not (ROOT / t).is_file()] == []


def test_every_setting_read_from_the_environment_is_in_the_settings_reference():
    names = set(_READ.findall((ROOT / "console" / "settings.py").read_text(encoding="utf-8")))
    page = (DOCS / "reference" / "settings.md").read_text(encoding="utf-8")

    assert "LEASE_SECONDS" in names and "SECRET_KEY" in names and "DEBUG" in names
    assert sorted(n for n in names if f"`{n}`" not in page) == []


def test_every_management_command_is_in_the_commands_reference():
    commands = {
        path.stem
        for path in (ROOT / "console").glob("*/management/commands/*.py")
        if not path.stem.startswith("_")
    }
    page = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z_]+)", page, flags=re.MULTILINE))

    assert "ingest" in commands
    assert sorted(commands - listed) == []


def test_the_committed_api_schema_is_the_one_the_code_makes():
    committed = yaml.safe_load((DOCS / "reference" / "openapi.yaml").read_text(encoding="utf-8"))
    current = json.loads(
        OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True))
    )

    assert committed == current, "the API changed: `make docs` writes docs/reference/openapi.yaml"
