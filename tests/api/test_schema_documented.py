"""Every operation of /api/schema/ is documented for a reader of /api/docs/: it says what it does,
shows an example (of what to send, and of what comes back), and documents its refusals in the
project's error shape, the 429 of the rates with its Retry-After included."""

import jsonschema
import pytest

from tests.api.conftest import openapi_document

# Every operation may answer these: no credentials, a permission missing, too many calls.
ALWAYS = ("401", "403", "429")


@pytest.fixture(scope="module")
def document():
    return openapi_document()


def _operations(document):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            yield f"{method.upper()} {path}", operation


def _has_example(content):
    return any("examples" in media or "example" in media for media in content.values())


def _resolve(document, schema):
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = document["components"]["schemas"][name]
    return schema


def _says_why(document, schema):
    """The error shape: an object with a `detail` sentence (one of a oneOf's choices will do)."""
    schema = _resolve(document, schema)
    if "oneOf" in schema:
        return any(_says_why(document, choice) for choice in schema["oneOf"])
    return "detail" in schema.get("properties", {})


def undescribed(document):
    return [name for name, op in _operations(document) if not op.get("description")]


def described_alike(document):
    """Operations that share their description with another: a class's docstring that speaks
    of two methods at once, or one inherited from a base class, says what neither does."""
    seen = {}
    for name, operation in _operations(document):
        seen.setdefault(operation.get("description"), []).append(name)
    return [names for text, names in seen.items() if text and len(names) > 1]


def without_examples(document):
    missing = []
    for name, operation in _operations(document):
        body = operation.get("requestBody", {}).get("content", {})
        if body and not _has_example(body):
            missing.append(f"{name}: request")
        answers = [
            response.get("content", {})
            for code, response in operation["responses"].items()
            if code.startswith("2")
        ]
        if any(answers) and not any(_has_example(content) for content in answers if content):
            missing.append(f"{name}: answer")
    return missing


def refusals_undocumented(document):
    wrong = []
    for name, operation in _operations(document):
        responses = operation["responses"]
        wrong += [f"{name}: no {code}" for code in ALWAYS if code not in responses]
        for code, response in responses.items():
            if code.startswith("4"):
                for media, content in response.get("content", {}).items():
                    if not _says_why(document, content["schema"]):
                        wrong.append(f"{name}: {code} {media} has no detail")
                if not _has_example(response.get("content", {})):
                    wrong.append(f"{name}: {code} has no example")
        if "Retry-After" not in responses.get("429", {}).get("headers", {}):
            wrong.append(f"{name}: 429 without Retry-After")
    return wrong


def _json_schema(schema):
    """OpenAPI 3.0's schema as JSON Schema: `nullable` as a type of its own."""
    if isinstance(schema, list):
        return [_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: _json_schema(value) for key, value in schema.items()}
    if schema.pop("nullable", False):
        if "type" in schema:
            schema["type"] = [schema["type"], "null"]
            if "enum" in schema:
                schema["enum"] = [*schema["enum"], None]
        else:
            schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


def examples_not_valid(document):
    # The components, for the examples' $refs to resolve against.
    root = {"components": _json_schema(document["components"])}
    wrong = []
    for name, operation in _operations(document):
        places = [("request", operation.get("requestBody", {}))]
        places += [(code, response) for code, response in operation["responses"].items()]
        for where, part in places:
            for media, content in part.get("content", {}).items():
                if "json" not in media:
                    continue
                schema = {**_json_schema(content["schema"]), **root}
                for title, example in content.get("examples", {}).items():
                    try:
                        jsonschema.validate(example["value"], schema)
                    except jsonschema.ValidationError as exc:
                        wrong.append(f"{name} {where} {title!r}: {exc.message}")
    return wrong


def test_every_operation_says_what_it_does(document):
    assert undescribed(document) == []
    assert described_alike(document) == []


def test_every_operation_shows_an_example_of_what_to_send_and_of_its_answer(document):
    assert without_examples(document) == []


def test_every_operation_documents_its_refusals_in_the_error_shape(document):
    assert refusals_undocumented(document) == []


def test_every_example_is_valid_against_its_schema(document):
    assert examples_not_valid(document) == []
