"""API tokens and service accounts, written: making and revoking tokens, making service
accounts. Who may do what is in selectors.py's docstring, checked here whichever way the call
comes; every token made, revoked or found expired is in the audit trail, by its key, never the
token."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from knox.models import get_digest_token
from knox.settings import CONSTANTS, knox_settings

from console.access.actor import acting_name
from console.access.service_accounts import is_service_account
from console.access.services import role_grant_request
from console.accounts.models import NAME_MAX, ApiToken
from console.accounts.roles import APPLICATION
from console.accounts.tokens.selectors import (
    DAYS_MAX,
    MANAGE_SERVICE_TOKENS,
    not_a_service_account,
    tokens_refusal,
)
from console.audit.services import audit_record


def _check_may_manage(actor, owner, *, making=False):
    if isinstance(actor, str):
        # A command run on the server ("command:..."): see the module's docstring.
        if not is_service_account(owner):
            raise ValidationError(not_a_service_account(owner))
        return
    refusal = tokens_refusal(actor, owner, making=making)
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


def _delete(token):
    """Delete `token`; False if another call deleted it first (then it audits, not this one)."""
    return bool(ApiToken.objects.filter(digest=token.digest).delete()[1].get(ApiToken._meta.label))


def token_create(*, actor, user, name, days=None):
    """Make a token for the service account `user`, good for `days` (API_TOKEN_DAYS by default).
    Returns (the row, the token): the token is shown once and stored only as a digest."""
    _check_may_manage(actor, user, making=True)
    name = _valid_name(name)
    ttl = _valid_days(days)
    if not user.is_active:
        raise ValidationError(f"{user.get_username()}'s account is disabled")
    expiry = timezone.now() + ttl
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
        if not _delete(token):
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
        if not _delete(token):
            return False
        audit_record(
            actor="system",
            action="token.expired",
            target_type="user",
            target_id=token.user.get_username(),
            details={"name": token.name, "token_key": token.token_key},
        )
    return True


def tokens_revoke_all(*, user, reason):
    """Revoke every token of `user`, each recorded with `reason` (the actor is whoever is acting:
    console.access.actor). For an account that is no longer a service account: its tokens open
    nothing already (authentication asks at each call), and must not open anything again should
    it become one anew. Returns how many."""
    revoked = 0
    for token in list(ApiToken.objects.filter(user=user)):
        with transaction.atomic():
            if not _delete(token):
                continue
            audit_record(
                actor=acting_name(),
                action="token.revoked",
                target_type="user",
                target_id=user.get_username(),
                details={**_details(token), "reason": reason},
            )
            revoked += 1
    return revoked


def service_account_create(*, actor, username, comment=""):
    """Make a service account named `username` for an application: no password (it never signs
    in), and the application role asked for by a role grant, which a second administrator
    confirms (R19: it sends into every queue). Returns (the account, the pending grant)."""
    if not actor.has_perm(MANAGE_SERVICE_TOKENS):
        raise PermissionDenied("only an administrator makes service accounts")
    User = get_user_model()
    username = (username or "").strip()
    user = User(username=username)
    user.set_unusable_password()
    try:
        user.full_clean(exclude=["password"])
    except ValidationError as exc:
        raise ValidationError(
            [f"{field}: {m}" for field, ms in exc.message_dict.items() for m in ms]
        ) from None
    with transaction.atomic():
        user.save()
        grant = role_grant_request(
            actor=actor,
            user=user,
            role=Group.objects.get(name=APPLICATION),
            comment=comment or f"a service account for {username}",
        )
    return user, grant
