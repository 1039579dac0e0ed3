"""API tokens and service accounts: making and revoking them (services), and reading them
(selectors).

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

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, Prefetch
from django.utils import timezone
from knox.models import get_digest_token
from knox.settings import CONSTANTS, knox_settings

from console.access.actor import acting_name
from console.access.service_accounts import MAKE_ONE, is_service_account
from console.access.services import role_grant_request
from console.accounts.models import NAME_MAX, ApiToken
from console.accounts.roles import APPLICATION
from console.audit.services import audit_record
from console.permissions import MANAGE_USERS

DAYS_MAX = 365
# Those who manage users (administrators) manage the service accounts and their tokens.
MANAGE_SERVICE_TOKENS = MANAGE_USERS
ADMINISTRATORS_ONLY = "only an administrator manages the service accounts' tokens"
MADE_BY_ADMINISTRATORS = (
    "a service account's tokens are made by an administrator (the Service tokens page), not by "
    "the account itself"
)


# --- Selectors -----------------------------------------------------------------------------------


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


# --- Services ------------------------------------------------------------------------------------


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


def tokens_revoke_all(*, user, reason):
    """Revoke every token of `user`, each recorded with `reason` (the actor is whoever is acting:
    console.access.actor). For an account that is no longer a service account: its tokens open
    nothing already (authentication asks at each call), and must not open anything again should
    it become one anew. Returns how many."""
    revoked = 0
    for token in list(ApiToken.objects.filter(user=user)):
        with transaction.atomic():
            deleted = ApiToken.objects.filter(digest=token.digest).delete()[1]
            if not deleted.get(ApiToken._meta.label, 0):
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
