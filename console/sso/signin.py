"""A person signing in through a provider: their account here found by the provider's identity
(made on first sign-in), their name and e-mail address kept as the provider says, and their
roles set from the provider's groups (console.sso.mapping). Every change is recorded in the audit
trail with the provider as its actor ("provider:oidc", "provider:ldap").

Separation of duties holds (R17, R19, console.access): a role that grows the person's rights,
coming from a group for the first time, waits for an administrator's confirmation as a role grant
asked for by the provider (the provider asks, an administrator confirms: two parties), unless the
organisation trusts its provider's groups (SSO_TRUST_PRIVILEGED_GROUPS); the approver cool-down
counts from when the role was given (the confirmation, or the trusted sign-in). A service account
never signs in here, whatever a provider says of it."""

import contextlib
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from console.access.actor import acting_as
from console.access.models import ProviderRole, RoleGrant
from console.access.receivers import confirmed_grant
from console.access.rights import rights_added
from console.access.service_accounts import holds_service_role
from console.access.services import grant_audit_record
from console.audit.services import audit_record
from console.sso.mapping import roles_for
from console.sso.models import ProviderAccount

PROVIDER_NAMES = dict(ProviderAccount.PROVIDERS)


class SignInRefused(Exception):
    """The provider vouched for the person, but Antidote does not let them in: said in words
    they can act on."""


def provider_actor(provider):
    return f"provider:{provider}"


def _refuse(provider, claims, reason):
    audit_record(
        actor=provider_actor(provider),
        action="sso.sign_in_refused",
        target_type="user",
        target_id=claims.username,
        details={"provider": provider, "subject": claims.subject, "reason": reason},
    )
    raise SignInRefused(reason)


def _account(provider, claims):
    """(user, link) for the provider's identity: found by its link, or made with one."""
    User = get_user_model()
    link = (
        ProviderAccount.objects.select_for_update()
        .select_related("user")
        .filter(provider=provider, subject=claims.subject)
        .first()
    )
    if link is not None:
        return link.user, link
    if User.objects.filter(username=claims.username).exists():
        return None, None
    user = User(username=claims.username, email=claims.email)
    user.first_name, user.last_name = claims.first_name, claims.last_name
    user.set_unusable_password()  # signs in through the provider only
    user.save()
    link = ProviderAccount.objects.create(user=user, provider=provider, subject=claims.subject)
    return user, link


def _profile_update(user, claims):
    """Name and e-mail address as the provider says (a change is recorded by console.access)."""
    fields = {"email": claims.email, "first_name": claims.first_name, "last_name": claims.last_name}
    changed = [f for f, v in fields.items() if v and getattr(user, f) != v]
    for field in changed:
        setattr(user, field, fields[field])
    if changed:
        user.save(update_fields=changed)


def roles_apply(user, provider, groups, *, now=None):
    """Give `user` the roles the provider's `groups` map to and take away those given by this
    provider that they no longer map to. Returns {"added", "removed", "waiting"}: role names,
    "waiting" for a confirmation by an administrator. Roles an administrator granted here are
    left as they are."""
    now = now or timezone.now()
    wanted = roles_for(provider, groups)
    from_provider = {
        r.role.name: r
        for r in ProviderRole.objects.select_related("role").filter(user=user, provider=provider)
    }
    held = set(user.groups.values_list("name", flat=True))
    roles = {g.name: g for g in Group.objects.filter(name__in=[*wanted, *from_provider])}
    added, removed, waiting = [], [], []
    for name, given in from_provider.items():
        if name not in wanted:
            user.groups.remove(given.role)
            given.delete()
            removed.append(name)
    asked = RoleGrant.objects.filter(user=user, source=provider, status=RoleGrant.PENDING)
    for grant in asked.exclude(role__name__in=wanted):
        _grant_withdraw(grant, provider, now, "the provider no longer shows the group that asked")
    for name, because in sorted(wanted.items()):
        role = roles.get(name)
        if role is None:  # the roles are seeded by migrations: a missing one is a broken install
            raise Group.DoesNotExist(f"role {name!r} does not exist: run manage.py seed_roles")
        if name in from_provider:
            if from_provider[name].groups != because:
                ProviderRole.objects.filter(pk=from_provider[name].pk).update(groups=because)
            continue
        if name in held:
            continue  # granted here by an administrator: theirs to take away, not the provider's
        grows = bool(rights_added(user, [role]))
        if grows and not settings.SSO_TRUST_PRIVILEGED_GROUPS:
            if _grant_ask(user, role, provider, because, now):
                waiting.append(name)
            continue
        with confirmed_grant() if grows else contextlib.nullcontext():
            user.groups.add(role)
        ProviderRole.objects.create(
            user=user, role=role, provider=provider, groups=because, since=now
        )
        # Asked for before, and given now without it (it adds nothing any more, or trusted).
        for grant in asked.filter(role=role):
            _grant_withdraw(grant, provider, now, "given at sign-in without a confirmation")
        added.append(name)
    return {"added": added, "removed": removed, "waiting": waiting}


def _grant_withdraw(grant, provider, now, why):
    if RoleGrant.objects.filter(id=grant.id, status=RoleGrant.PENDING).update(
        status=RoleGrant.WITHDRAWN, decided_at=now
    ):
        grant_audit_record(
            actor=provider_actor(provider),
            action="role_grant.withdrawn",
            grant=grant,
            comment=why,
        )


def _grant_ask(user, role, provider, because, now):
    """A role grant asked for by the provider, waiting for an administrator (one asked already,
    by the provider or an administrator, is left to be decided). True when one waits."""
    if RoleGrant.objects.filter(user=user, role=role, status=RoleGrant.PENDING).exists():
        return True
    grant = RoleGrant.objects.create(
        user=user,
        role=role,
        requested_by=None,
        source=provider,
        source_groups=because,
        requested_at=now,
        comment=f"member of {', '.join(because)} at {PROVIDER_NAMES[provider]}",
        expires_at=now + timedelta(days=settings.ROLE_GRANT_EXPIRY_DAYS),
    )
    grant_audit_record(
        actor=provider_actor(provider),
        action="role_grant.requested",
        grant=grant,
        comment=grant.comment,
    )
    return True


def provider_sign_in(provider, claims):
    """The account `claims` (console.sso.oidc.Claims) sign in to, its roles set from the
    provider's groups; raises SignInRefused with the reason, recorded. Changes made before a
    refusal stay (a role taken away is taken away even when the sign-in is then refused)."""
    now = timezone.now()
    refusal = None
    with acting_as(provider_actor(provider)), transaction.atomic():
        user, link = _account(provider, claims)
        if user is None:
            refusal = (
                f"an account named {claims.username!r} exists here already and is not linked to "
                f"this {PROVIDER_NAMES[provider]} identity: an administrator renames one of them"
            )
        elif holds_service_role(user):
            refusal = "this is a service account: it acts through its API tokens, never signs in"
        elif not user.is_active and not link.deactivated_by_provider:
            refusal = "this account was deactivated by an administrator"
        else:
            if not user.is_active:
                user.is_active = True  # the provider refused them before and vouches again now
                user.save(update_fields=["is_active"])
            _profile_update(user, claims)
            changes = roles_apply(user, provider, claims.groups, now=now)
            if link.deactivated_by_provider:
                ProviderAccount.objects.filter(pk=link.pk).update(deactivated_by_provider=False)
            audit_record(
                actor=provider_actor(provider),
                action="sso.signed_in",
                target_type="user",
                target_id=user.get_username(),
                details={
                    "provider": provider,
                    "subject": claims.subject,
                    "groups": list(claims.groups),
                    **changes,
                },
            )
            if not user.groups.exists():
                refusal = "your groups give you no role here"
                if changes["waiting"]:
                    refusal += (
                        f" yet: {', '.join(changes['waiting'])} waits for an administrator's "
                        "confirmation"
                    )
    if refusal is not None:
        _refuse(provider, claims, refusal)
    return user


def provider_refused(user, provider, reason):
    """The provider no longer vouches for `user` (it refused them): the account is deactivated,
    recorded with the reason; a later sign-in the provider accepts makes it active again."""
    with acting_as(provider_actor(provider)), transaction.atomic():
        link = ProviderAccount.objects.select_for_update().filter(user=user).first()
        if link is None or link.provider != provider:
            return
        ProviderAccount.objects.filter(pk=link.pk).update(deactivated_by_provider=True)
        if user.is_active:
            user.is_active = False
            user.save(update_fields=["is_active"])
        audit_record(
            actor=provider_actor(provider),
            action="sso.refused",
            target_type="user",
            target_id=user.get_username(),
            details={"provider": provider, "subject": link.subject, "reason": reason},
        )
