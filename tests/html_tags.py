"""A page's tags as a browser parses them, for tests that check hostile text stays text."""

from html.parser import HTMLParser


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def html_tags(html):
    """Every start tag of `html` with its real attributes, as (tag, attrs) pairs."""
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def assert_attributes_inert(tag, attrs):
    """The tag runs nothing: no event handler, no inline style, no `javascript:` link or target."""
    assert not any(name.startswith("on") for name in attrs), (tag, attrs)
    assert "style" not in attrs, (tag, attrs)
    for name in ("href", "src", "action", "formaction"):
        assert not (attrs.get(name) or "").strip().lower().startswith("javascript:"), attrs
