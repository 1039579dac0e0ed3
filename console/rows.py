"""What a selector answers with, made from a model's row: a dataclass of the fields the screens
and the API show, most of them the row's own columns under the same names."""

from dataclasses import fields


def from_row(cls, row, **given):
    """A `cls` (a dataclass) whose fields are those `given`, the others read from the row's
    attributes of the same names."""
    return cls(
        **{
            field.name: given[field.name] if field.name in given else getattr(row, field.name)
            for field in fields(cls)
        }
    )
