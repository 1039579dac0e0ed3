"""Issue 34, as a person does it in Chromium: "Sign in with Example SSO" on the login page, the
real provider's own sign-in and consent pages (oidc-provider under Node.js), back to the
dashboard as an operator; then signing out, through the provider's sign-out page, back to the
login page."""

import re
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User

from tests.sso.conftest import GROUP_ROLES
from tests.sso.provider import OpenIdProvider

pytestmark = [pytest.mark.slow]


@pytest.fixture
def provider(tmp_path, settings, live_server):
    roles = tmp_path / "group-roles.yaml"
    roles.write_text(GROUP_ROLES)
    op = OpenIdProvider(tmp_path / "op", redirect_base=live_server.url).start()
    op.settings(settings, OIDC_PROVIDER_NAME="Example SSO", SSO_GROUP_ROLES=str(roles))
    # The operator's role from the group at once (by default it waits for an administrator).
    settings.SSO_TRUST_PRIVILEGED_GROUPS = True
    yield op
    op.stop()


@pytest.fixture
def local_only(tab):
    """Nothing leaves the machine: the provider's pages ask for a web font, refused here."""

    def route(r):
        host = urlsplit(r.request.url).hostname
        r.continue_() if host in ("127.0.0.1", "localhost") else r.abort()

    tab.page.route("**/*", route)
    return tab


def test_a_person_signs_in_with_the_provider_and_out_again(personas, provider, local_only):
    tab, page = local_only, local_only.page
    provider.person("dana", groups=["ops"], name="Dana Scully", email="dana@corp.example")

    tab.goto("/login/")
    with page.expect_navigation():
        page.get_by_role("link", name="Sign in with Example SSO").click()
    assert page.url.startswith(provider.issuer)  # the provider's own page
    page.fill("input[name=login]", "dana")
    page.fill("input[name=password]", "her password at the provider")
    with page.expect_navigation():
        page.get_by_role("button", name="Sign-in").click()
    with page.expect_navigation(url=re.compile(re.escape(tab.base_url) + "/$")):
        page.get_by_role("button", name="Continue").click()

    assert page.url == tab.base_url + "/"
    assert "dana" in page.locator("header").inner_text()
    assert list(User.objects.get(username="dana").groups.values_list("name", flat=True)) == [
        "operator"
    ]

    tab.logout()
    assert page.url.startswith(provider.issuer)  # the provider asks to sign out there too
    with page.expect_navigation(url=re.compile(re.escape(tab.base_url) + "/login/")):
        page.get_by_role("button", name="Yes, sign me out").click()
    assert page.locator("#oidc-sign-in").is_visible()
    assert not tab.errors and not tab.csp_violations
