"""API tokens and service accounts, read: whose tokens, which accounts are service accounts,
and who may manage whose (services.py makes and revokes them, by the same rules).

R19: a token acts only for a service account (console.access.service_accounts: the application
role and nothing else, no way to sign in), with that account's rights at each call. Who may do
what, checked here whichever way the call comes (screen, API, command):
- nobody has a token for a person's account, their own included: a person calls the API signed
  in, with their session, and a token made for a person would carry their rights to whoever
  holds it (an administrator making one for an approver would act as the approver);
- an administrator (MANAGE_SERVICE_TOKENS) makes, lists and revokes a service account's tokens,
  and makes service accounts (the application role given by a role grant a second administrator
  confirms: a service account sends into every queue);
- a service account lists and revokes its own tokens, and makes none: a leaked token cannot mint
  itself a successor that outlives its revocation;
- a management command makes one for a service account too: whoever runs commands holds the
  server, but a token for a person would be refused at its first call anyway.
Every token made, revoked or found expired is in the audit trail, by its key, never the token.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.db.models import Count, Prefetch

from console.access.service_accounts import MAKE_ONE, is_service_account
from console.accounts.models import ApiToken
from console.accounts.roles import APPLICATION
from console.permissions import MANAGE_USERS

DAYS_MAX = 365
# Those who manage users (administrators) manage the service accounts and their tokens.
MANAGE_SERVICE_TOKENS = MANAGE_USERS
ADMINISTRATORS_ONLY = "only an administrator manages the service accounts' tokens"
MADE_BY_ADMINISTRATORS = (
    "a service account's tokens are made by an administrator (the Service tokens page), not by "
    "the account itself"
)


def _tokens():
    return ApiToken.objects.select_related("created_by").order_by("-created")


def tokens_of(user):
    """The tokens of `user` that have not been revoked, newest first; expired ones too, until
    they are used (then deleted) or revoked."""
    return _tokens().filter(user=user)


def service_accounts():
    """The service accounts (console.access.service_accounts), by name, each with its tokens in
    `.tokens`: in the application role and no other, neither staff nor superuser, no usable
    password, no permission of their own."""
    return (
        get_user_model()
        # Counted before the filter on the role, so that every role the account holds counts.
        .objects.annotate(roles=Count("groups", distinct=True))
        .filter(roles=1, groups__name=APPLICATION, is_superuser=False, is_staff=False)
        .filter(password__startswith=UNUSABLE_PASSWORD_PREFIX, user_permissions__isnull=True)
        .order_by("username")
        .prefetch_related(Prefetch("auth_token_set", queryset=_tokens(), to_attr="tokens"))
    )


def account_named(username):
    """The user with this name, or None."""
    return get_user_model().objects.filter(username=username).first()


def not_a_service_account(owner):
    return (
        f"{owner.get_username()} is not a service account (the application role alone, no way "
        "to sign in): a token acts only for a service account, never for a person's account; "
        f"{MAKE_ONE}"
    )


def tokens_refusal(actor, owner, *, making=False):
    """Why the signed-in `actor` may not list or revoke (or, `making`, make) `owner`'s tokens;
    None if they may."""
    if not is_service_account(owner):
        return not_a_service_account(owner)
    if actor.pk == owner.pk:
        return MADE_BY_ADMINISTRATORS if making else None
    if is_service_account(actor) or not actor.has_perm(MANAGE_SERVICE_TOKENS):
        return ADMINISTRATORS_ONLY
    return None


def token_find(*, actor, key):
    """The token with this key if `actor` may manage it, else None: whether a key exists is
    no business of those who may not touch it."""
    if "\x00" in key:
        return None  # no key has one, and PostgreSQL refuses the very query
    token = _tokens().select_related("user").filter(token_key=key).first()
    if token is None or tokens_refusal(actor, token.user):
        return None
    return token
