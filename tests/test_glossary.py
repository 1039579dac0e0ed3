"""The glossary (console.glossary, /help/glossary/): every state and every rule R1-R19 in a
sentence, read by every signed-in role."""

import pytest
from django.urls import reverse

from console import glossary
from tests.browse.conftest import login
from workers.engine.states import STATES


def test_every_rule_r1_to_r19_is_in_the_glossary_once():
    assert [rule for rule, _, _ in glossary.RULES] == [f"R{n}" for n in range(1, 20)]
    assert all(name and sentence.endswith(".") for _, name, sentence in glossary.RULES)


def test_every_state_is_in_the_glossary():
    assert [code for code, _, _ in glossary.STATES] == list(STATES)


def test_the_words_of_the_screens_are_in_the_glossary():
    words = {word for word, _ in glossary.TERMS}

    for word in ("quarantine", "reprocess", "fail", "end with error", "blacklist candidate"):
        assert word in words
    assert {"four eyes", "break-glass"} <= words


@pytest.mark.parametrize(
    "role", ["viewer", "operator", "approver", "admin", "auditor", "application", "outsider"]
)
def test_every_signed_in_user_reads_the_glossary(personas, role):
    page = login(personas[role]).get(reverse("glossary"))

    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="rule-R1"' in text and 'id="rule-R17"' in text
    assert f'href="{reverse("glossary")}"' in text  # and the help dialog leads there


def test_an_anonymous_visitor_is_sent_to_log_in_first(db):
    response = login().get(reverse("glossary"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
