"""What the forms of every screen share."""

from django import forms


class NoAutocompleteForm(forms.Form):
    """A form whose fields the browser does not remember: what people type here (ids, senders,
    text searched for in bodies, edited bodies) may be personal data, and a browser shared by
    several people would offer it to the next one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.widget.attrs.setdefault("autocomplete", "off")
