"""A finding in words (console.lakequery.templatetags.why): field names, header names and values
come from messages, so a producer may name a field with markup. It is shown as inert text."""

from console.lakequery.templatetags.why import finding_said


def _finding(**fields):
    return {
        "kind": "field",
        "name": "currency",
        "value": None,
        "absent": True,
        "failures": 194,
        "failures_total": 200,
        "deliveries": 4,
        "deliveries_total": 2000,
        **fields,
    }


def test_a_finding_says_its_trait_and_its_shares_on_both_sides():
    assert str(finding_said(_finding())) == (
        "the field <code>currency</code> is absent in 97 % of these failures (194 of 200) and "
        "0.2 % of deliveries (4 of 2,000)"
    )
    assert str(finding_said(_finding(kind="size", name="", value="2^10", absent=False))) == (
        "the body&#x27;s size is 1,024 to 2,047 bytes in 97 % of these failures (194 of 200) and "
        "0.2 % of deliveries (4 of 2,000)"
    )


def test_markup_in_a_field_name_or_a_header_value_is_shown_as_text():
    said = str(
        finding_said(
            _finding(
                kind="header_value",
                name='<img src=x onerror="alert(1)">',
                value="<script>alert(2)</script>",
                absent=False,
            )
        )
    )
    assert "<img" not in said and "<script>" not in said
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in said
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in said
