"""A real OpenID Provider (tests/sso/provider.py) and a person going through its pages with an
HTTP client (the browser test, tests/browser/test_oidc_sign_in_flow.py, uses Chromium): the
console is the Django test client, so the provider sends people back to http://testserver."""

import html
import re
from urllib.parse import urlsplit

import pytest
import requests

from tests.sso.provider import OpenIdProvider

GROUP_ROLES = """\
oidc:
  ops: [operator]
  leads: [approver]
  auditors: auditor
  platform: admin
ldap:
  CN=ops,OU=groups,DC=example,DC=com: [operator]
  cn=leads,ou=groups,dc=example,dc=com: [approver]
  cn=auditors,ou=groups,dc=example,dc=com: auditor
"""
TESTSERVER = "http://testserver"


@pytest.fixture
def group_roles(tmp_path, settings):
    path = tmp_path / "group-roles.yaml"
    path.write_text(GROUP_ROLES)
    settings.SSO_GROUP_ROLES = str(path)
    # These tests are about signing in: the groups give their roles at once. By default every
    # role that grows a person's rights waits for an administrator the first time (R19):
    # tests/sso/test_oidc_separation_of_duties.py and the LDAP ones on the leads turn it off.
    settings.SSO_TRUST_PRIVILEGED_GROUPS = True
    return path


@pytest.fixture
def provider(tmp_path, settings, group_roles):
    op = OpenIdProvider(tmp_path / "op", redirect_base=TESTSERVER).start()
    op.settings(settings, OIDC_PROVIDER_NAME="Example SSO")
    yield op
    op.stop()


def _form(page):
    """(action, fields) of the provider page's form."""
    action = html.unescape(re.search(r'<form[^>]*action="([^"]+)"', page).group(1))
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
    return action, fields


class Person:
    """Someone at a browser: the provider's cookies in a requests session, the console's in a
    Django test client."""

    def __init__(self, op, client):
        self.op = op
        self.client = client
        self.at_provider = requests.Session()

    def _follow(self, url):
        """Follow the provider's redirects until one leads back to the console (returned) or
        to a page of the provider's (returned as its response)."""
        while True:
            if url.startswith(TESTSERVER):
                return url
            answer = self.at_provider.get(url, allow_redirects=False, timeout=10)
            if answer.status_code in (302, 303):
                url = requests.compat.urljoin(url, answer.headers["Location"])
                continue
            return answer

    def _submit(self, answer, **fields):
        action, hidden = _form(answer.text)
        url = requests.compat.urljoin(answer.url, action)
        posted = self.at_provider.post(
            url, data={**hidden, **fields}, allow_redirects=False, timeout=10
        )
        assert posted.status_code in (302, 303), posted.text[:500]
        return self._follow(requests.compat.urljoin(url, posted.headers["Location"]))

    def sign_in(self, login, *, next_url=""):
        """The console's "Sign in with ..." to the provider's pages and back: the console's
        answer to the callback."""
        start = self.client.get("/sso/oidc/login/" + (f"?next={next_url}" if next_url else ""))
        assert start.status_code == 302, start.content[:500]
        step = self._follow(start["Location"])
        while not isinstance(step, str):
            if step.status_code != 200:
                return step  # the provider refused: its own error page
            if 'name="login"' in step.text:
                step = self._submit(step, login=login, password="any password")
            elif 'value="consent"' in step.text:
                step = self._submit(step)
            else:
                raise AssertionError(f"a provider page not expected: {step.text[:500]}")
        back = urlsplit(step)
        return self.client.get(f"{back.path}?{back.query}")

    def sign_out(self):
        """The console's sign-out, then the provider's ("Yes, sign me out"): the URL the
        provider sends the browser back to."""
        answer = self.client.post("/logout/")
        assert answer.status_code == 302
        if not answer["Location"].startswith(self.op.issuer):
            return answer["Location"]
        page = self._follow(answer["Location"])
        action, hidden = _form(page.text)
        url = requests.compat.urljoin(page.url, action)
        posted = self.at_provider.post(
            url, data={**hidden, "logout": "yes"}, allow_redirects=False, timeout=10
        )
        assert posted.status_code in (302, 303), posted.text[:500]
        return self._follow(requests.compat.urljoin(url, posted.headers["Location"]))


@pytest.fixture
def person(provider, client):
    return Person(provider, client)


@pytest.fixture
def directory(tmp_path, settings, group_roles):
    """Debian's slapd on a free port, and the console signing people in with it."""
    from tests.sso.directory import Directory

    found = Directory(tmp_path / "ldap").start()
    found.settings(settings)
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "console.sso.directory.DirectoryBackend",
    ]
    yield found
    found.stop()
