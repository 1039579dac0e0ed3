"""Every permission a role holds is said in words (console.permissions.WORDS): the role grant
pages list them, and refusals name them, as what they let one do, never as a codename."""

from console.accounts.roles import ROLE_PERMISSIONS
from console.permissions import WORDS, needs_text, permission_words


def test_every_permission_any_role_holds_has_words():
    held = {name for names in ROLE_PERMISSIONS.values() for name in names}

    assert held - set(WORDS) == set()


def test_no_two_permissions_are_said_the_same_way():
    assert len(set(WORDS.values())) == len(WORDS)


def test_a_permission_unknown_to_the_words_is_still_not_shown_as_a_code():
    assert permission_words("ingest.add_messagekey") == "sending messages"
    assert permission_words("shop.frobnicate_order") == "frobnicate order in shop"


def test_a_refusal_names_the_permission_in_words(personas):
    said = needs_text(["decisions.approve_actionrequest"], user=personas["viewer"])

    assert said == "this needs permission for approving action requests (the approver role)"
