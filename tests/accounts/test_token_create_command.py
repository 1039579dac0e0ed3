"""manage.py token_create: a token for a service account, printed once and audited; never one
for a person's account (R19)."""

import getpass
import io

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from console.accounts.models import ApiToken
from console.audit.models import AuditEntry


def test_it_prints_a_token_that_works_and_audits_it(personas):
    out, err = io.StringIO(), io.StringIO()

    call_command(
        "token_create", "application", "--name", "billing", "--days", "7", stdout=out, stderr=err
    )
    token = out.getvalue().strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    row = ApiToken.objects.get()
    assert token.startswith(row.token_key)
    assert row.created_by is None
    assert "shown once" in err.getvalue()
    assert client.get("/api/v1/poison-list").status_code == 200
    entry = AuditEntry.objects.get(action="token.created")
    assert (entry.target_id, entry.details["name"]) == ("application", "billing")
    assert entry.actor == f"cli:{getpass.getuser()}"


def test_it_makes_none_for_a_persons_account(personas):
    with pytest.raises(CommandError, match="operator is not a service account"):
        call_command(
            "token_create",
            "operator",
            "--name",
            "break glass",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )

    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nobody", "--name", "x"], "no such user: nobody"),
        (["application", "--name", "x", "--days", "400"], "from 1 to 365 days"),
        (["application", "--name", " "], "needs a name"),
    ],
)
def test_it_refuses_what_the_service_refuses(personas, args, says):
    with pytest.raises(CommandError, match=says):
        call_command("token_create", *args, stdout=io.StringIO(), stderr=io.StringIO())

    assert not ApiToken.objects.exists()
