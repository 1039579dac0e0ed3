"""MkDocs hook: the API page's operations, made from the OpenAPI schema.

`make docs` writes the schema to docs/reference/openapi.yaml first (`manage.py spectacular`), and
tests/docs checks that the committed copy is current. This hook puts the schema's introduction and
one table per tag (method, path, what it does) where reference/api.md says
`<!-- openapi-operations -->`, so the site lists exactly the operations the console serves.
"""

from pathlib import Path

import yaml

MARKER = "<!-- openapi-operations -->"
PAGE = "reference/api.md"
SCHEMA = Path("reference") / "openapi.yaml"
METHODS = ("get", "put", "patch", "post", "delete")


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE:
        return markdown
    schema = yaml.safe_load((Path(config["docs_dir"]) / SCHEMA).read_text(encoding="utf-8"))
    return markdown.replace(MARKER, operations_markdown(schema))


def operations_markdown(schema):
    """The schema's introduction (its own sections: getting started, refusals), then the
    operations grouped by their first tag: tags in alphabetical order, operations in the
    schema's."""
    parts = [schema["info"].get("description", "").strip(), ""]
    by_tag = {}
    for path, item in schema["paths"].items():
        for method in METHODS:
            operation = item.get(method)
            if operation is not None:
                tag = (operation.get("tags") or ["other"])[0]
                by_tag.setdefault(tag, []).append((method.upper(), path, operation))
    parts.append("## Operations")
    parts.append("")
    for tag in sorted(by_tag):
        parts.append(f"### {tag[:1].upper()}{tag[1:]}")
        parts.append("")
        parts.append("| method | path | what it does |")
        parts.append("|---|---|---|")
        for method, path, operation in by_tag[tag]:
            text = operation.get("description") or operation.get("summary") or ""
            parts.append(f"| `{method}` | `{path}` | {_cell(text)} |")
        parts.append("")
    return "\n".join(parts)


def _cell(text):
    """One table cell: paragraphs joined on one line, and a pipe that would end the cell
    escaped."""
    return " ".join(text.split()).replace("|", "\\|")
