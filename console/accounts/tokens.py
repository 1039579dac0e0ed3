"""API tokens: making and revoking them (services), and reading them (selectors).

Who may do what, checked here whichever way the call comes (screen, API, command):
- anyone manages their own tokens;
- an administrator (MANAGE_SERVICE_TOKENS) manages those of service accounts, the users in the
  application role (an application outside the product has nobody to sign in for it);
- nobody makes a token for another person's account: it would let them act under that name;
- a management command may make one for anybody: whoever runs commands holds the server.
Every token made, revoked or found expired is in the audit trail, by its key, never the token.
"""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone
from knox.models import get_digest_token
from knox.settings import CONSTANTS, knox_settings

from console.accounts.models import NAME_MAX, ApiToken
from console.accounts.roles import APPLICATION
from console.audit.services import audit_record
from console.permissions import MANAGE_USERS

DAYS_MAX = 365
# Those who manage users (administrators) manage the service accounts' tokens.
MANAGE_SERVICE_TOKENS = MANAGE_USERS
OWN_TOKENS_ONLY = "you may manage your own tokens only"


# --- Selectors -----------------------------------------------------------------------------------


def _tokens():
    return ApiToken.objects.select_related("created_by").order_by("-created")


def tokens_of(user):
    """The tokens of `user` that have not been revoked, newest first; expired ones too, until
    they are used (then deleted) or revoked."""
    return _tokens().filter(user=user)


def service_accounts():
    """The users in the application role, by name, each with its tokens in `.tokens`."""
    return (
        get_user_model()
        .objects.filter(groups__name=APPLICATION, is_superuser=False)
        .distinct()
        .order_by("username")
        .prefetch_related(Prefetch("auth_token_set", queryset=_tokens(), to_attr="tokens"))
    )


def account_named(username):
    """The user with this name, or None."""
    return get_user_model().objects.filter(username=username).first()


def is_service_account(user):
    return not user.is_superuser and user.groups.filter(name=APPLICATION).exists()


def tokens_refusal(actor, owner):
    """Why the signed-in `actor` may not list, make or revoke `owner`'s tokens; None if they may."""
    if actor.pk == owner.pk:
        return None
    if not actor.has_perm(MANAGE_SERVICE_TOKENS):
        return OWN_TOKENS_ONLY
    if not is_service_account(owner):
        return (
            f"{owner.get_username()} is not a service account (the application role): nobody "
            "makes or manages tokens for another person's account"
        )
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


# --- Services ------------------------------------------------------------------------------------


def _check_may_manage(actor, owner):
    if isinstance(actor, str):
        return  # a command run on the server ("command:..."): see the module's docstring
    refusal = tokens_refusal(actor, owner)
    if refusal:
        raise PermissionDenied(refusal)


def _valid_name(name):
    name = (name or "").strip()
    if not name:
        raise ValidationError("a token needs a name: what it is for")
    if len(name) > NAME_MAX:
        raise ValidationError(f"a token's name has at most {NAME_MAX} characters")
    if not name.isprintable():
        raise ValidationError("a token's name must be printable text")
    return name


def _valid_days(days):
    if days is None:
        return knox_settings.TOKEN_TTL
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= DAYS_MAX:
        raise ValidationError(f"a token lasts from 1 to {DAYS_MAX} days, not {days!r}")
    return timedelta(days=days)


def _details(token):
    return {
        "name": token.name,
        "token_key": token.token_key,
        "expires_at": token.expiry.isoformat() if token.expiry else None,
    }


def token_create(*, actor, user, name, days=None, not_after=None):
    """Make a token for `user`, good for `days` (API_TOKEN_DAYS by default) but never past
    `not_after` (the API passes the expiry of the token a call came with: a stolen token cannot
    mint itself a longer life). Returns (the row, the token): the token is shown once and stored
    only as a digest."""
    _check_may_manage(actor, user)
    name = _valid_name(name)
    ttl = _valid_days(days)
    if not user.is_active:
        raise ValidationError(f"{user.get_username()}'s account is disabled")
    expiry = timezone.now() + ttl
    if not_after is not None:
        expiry = min(expiry, not_after)
    digest, clear = get_digest_token()
    with transaction.atomic():
        token = ApiToken(
            digest=digest,
            token_key=clear[: CONSTANTS.TOKEN_KEY_LENGTH],
            user=user,
            expiry=expiry,
            name=name,
            created_by=None if isinstance(actor, str) else actor,
        )
        token.save(force_insert=True)
        audit_record(
            actor=actor,
            action="token.created",
            target_type="user",
            target_id=user.get_username(),
            details=_details(token),
        )
    return token, clear


def token_revoke(*, actor, token):
    """Revoke a token: it opens nothing from now on. Returns False if it was gone already."""
    _check_may_manage(actor, token.user)
    with transaction.atomic():
        deleted = (
            ApiToken.objects.filter(digest=token.digest).delete()[1].get(ApiToken._meta.label, 0)
        )
        if not deleted:
            return False  # revoked (or found expired) by another call in the meantime
        audit_record(
            actor=actor,
            action="token.revoked",
            target_type="user",
            target_id=token.user.get_username(),
            details=_details(token),
        )
    return True


def token_expire(*, token):
    """Delete a token found expired when it was used, and audit that once, whoever else found
    it at the same moment. Returns whether this call deleted it."""
    with transaction.atomic():
        deleted = (
            ApiToken.objects.filter(digest=token.digest).delete()[1].get(ApiToken._meta.label, 0)
        )
        if not deleted:
            return False
        audit_record(
            actor="system",
            action="token.expired",
            target_type="user",
            target_id=token.user.get_username(),
            details={"name": token.name, "token_key": token.token_key},
        )
    return True
