"""Message ids (and queue names and group fingerprints) in page URLs: `<msgid:...>`, in the pages
of console.browse and console.queues.

An id is any printable text: it may hold '/', '?', '#', '%', quotes, or be "..". Django's
`path` converter would put its slashes in the URL as they are, so an id like "x/../y" would
become a link the browser normalizes to another message's page. This converter percent-encodes
the whole id (slashes too, and a segment of dots), so a link always names exactly its message.
Links come from {% url %} / reverse(); Django encodes the result once more, and the server
decodes it once, so `to_python` gets back what `to_url` made.
"""

from urllib.parse import quote, unquote

from django.urls import register_converter


class MessageIdConverter:
    # ".+", not one segment: a link typed by hand with the id as it is ("a/b") still works.
    regex = ".+"

    def to_python(self, value):
        return unquote(value)

    def to_url(self, value):
        encoded = quote(value, safe="")
        if encoded in (".", ".."):
            encoded = encoded.replace(".", "%2E")
        return encoded


# Registered here, once (Django warns when a name is registered again): a urls module that names
# `<msgid:...>` imports this module first.
register_converter(MessageIdConverter, "msgid")
