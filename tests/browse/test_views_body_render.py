"""How a body is shown on the detail page (console.browse.body)."""

from console.browse.body import BODY_SHOWN_BYTES, body_render, hexdump

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<lolz>&lol9;</lolz>"""

EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>"""


def test_json_is_pretty_printed():
    shown = body_render(b'{"b":[1,{"c":"\xc3\xa9"}],"a":null}', content_type="application/json")

    assert shown.kind == "json"
    assert (
        shown.text == '{\n  "b": [\n    1,\n    {\n      "c": "\u00e9"\n    }\n  ],\n  "a": null\n}'
    )


def test_json_is_recognised_without_its_content_type():
    assert body_render(b"  [1, 2]", content_type="text/plain").kind == "json"


def test_broken_json_is_shown_as_the_text_it_is():
    shown = body_render(b'{"a": ', content_type="application/json")

    assert (shown.kind, shown.text) == ("text", '{"a": ')


def test_xml_is_pretty_printed():
    shown = body_render(b"<order><id>7</id>  <items><item sku='a'/></items></order>")

    assert shown.kind == "xml"
    assert shown.text == (
        '<order>\n  <id>7</id>\n  <items>\n    <item sku="a"/>\n  </items>\n</order>'
    )


def test_a_billion_laughs_body_is_shown_as_text_without_expanding_an_entity():
    shown = body_render(BILLION_LAUGHS, content_type="application/xml")

    assert shown.kind == "text"
    assert shown.text == BILLION_LAUGHS.decode()
    assert "lollol" not in shown.text


def test_an_external_entity_is_never_loaded():
    shown = body_render(EXTERNAL, content_type="text/xml")

    assert shown.kind == "text"
    assert "root:" not in shown.text
    assert shown.text == EXTERNAL.decode()


def test_plain_text_is_shown_as_it_is():
    shown = body_render(b"hello <b>world</b> & more", content_type="text/plain")

    assert (shown.kind, shown.text) == ("text", "hello <b>world</b> & more")


def test_bytes_that_are_not_utf8_are_a_hex_dump():
    shown = body_render(b"\xff\xfeAB\x00\x01" + b"0123456789abcdef")

    assert shown.kind == "binary"
    assert shown.text.splitlines() == [
        "00000000  ff fe 41 42 00 01 30 31 32 33 34 35 36 37 38 39  |..AB..0123456789|",
        "00000010  61 62 63 64 65 66                                |abcdef|",
    ]


def test_text_with_a_nul_byte_is_binary():
    assert body_render(b"abc\x00def").kind == "binary"


def test_only_the_first_64_kib_is_shown_and_it_says_so():
    data = b"a" * BODY_SHOWN_BYTES + b"b" * 10

    shown = body_render(data)

    assert shown.truncated
    assert (shown.size, shown.shown) == (BODY_SHOWN_BYTES + 10, BODY_SHOWN_BYTES)
    assert shown.text == "a" * BODY_SHOWN_BYTES


def test_a_cut_through_a_character_does_not_make_text_binary():
    data = "\u00e9".encode() * (BODY_SHOWN_BYTES // 2) + b"x"  # the cut falls after a whole char
    data = b"x" + data  # now it falls inside one

    shown = body_render(data)

    assert shown.kind == "text"
    assert shown.truncated


def test_a_truncated_json_body_is_text_not_an_error():
    data = b'{"a": "' + b"x" * BODY_SHOWN_BYTES + b'"}'

    shown = body_render(data, content_type="application/json")

    assert (shown.kind, shown.truncated) == ("text", True)


def test_an_empty_body_is_empty_text():
    shown = body_render(b"")

    assert (shown.kind, shown.text, shown.truncated) == ("text", "", False)


def test_hexdump_of_nothing_is_empty():
    assert hexdump(b"") == ""
