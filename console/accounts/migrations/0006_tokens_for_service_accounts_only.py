"""R19 (issue 43): a token acts only for a service account, and operators and approvers no longer
send messages in. What an install had before is brought to that rule here, each change in the
audit trail:

1. An account in the application role and nothing else, that could sign in with a password,
   loses the password: it is a service account, and its tokens (its producer's) go on working.
2. An account in the application role and some other role (or staff, superuser, or with
   permissions of its own) is a person's: it loses the application role (console.accounts'
   receiver revokes its tokens then).
3. Every other token of an account that is not a service account (a person's own token, made
   on the old "API tokens" page) is revoked, one audit entry each: it opened nothing any more
   already (authentication asks at each call), and no copy of it should wait for a rule to
   change.
4. The roles' seed runs again: operators and approvers lose the sending of messages (a person
   sends by hand only into a queue two administrators agreed to).

With the real models, not the historical ones, on purpose, as 0004: the changes reach the audit
trail through console.access's signals, as any other route's do (the actor is the server account
that ran `migrate`). A database made from scratch has no users and no roles yet: nothing to do.
"""

from django.db import migrations

REASON = "a token acts only for a service account (issue 43)"


def _to_the_rule(apps, schema_editor):
    from django.contrib.auth.models import Group, Permission, User

    from console.access.actor import acting_name
    from console.access.service_accounts import SERVICE_ROLE, is_service_account
    from console.accounts.models import ApiToken
    from console.accounts.roles import APPROVER, OPERATOR, RoleError, roles_seed
    from console.accounts.tokens.services import tokens_revoke_all
    from console.audit.services import audit_record
    from console.permissions import INGEST_MESSAGES

    role = Group.objects.filter(name=SERVICE_ROLE).first()
    for user in list(User.objects.filter(groups=role)) if role else []:
        if is_service_account(user):
            continue
        others = user.groups.exclude(pk=role.pk).exists()
        if others or user.is_staff or user.is_superuser or user.user_permissions.exists():
            user.groups.remove(role)
            why = "a person's account (it holds more): the application role is a service account's"
        else:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            why = "a service account: it never signs in, and keeps its tokens"
        audit_record(
            actor=acting_name(),
            action="user.service_account_rule",
            target_type="user",
            target_id=user.get_username(),
            details={"reason": why},
        )
    for user_id in set(ApiToken.objects.values_list("user_id", flat=True)):
        user = User.objects.get(pk=user_id)
        if not is_service_account(user):
            tokens_revoke_all(user=user, reason=REASON)

    if not Group.objects.filter(name=OPERATOR).exists():
        return  # never seeded: seed_roles makes the roles as they are now
    try:
        roles_seed()
    except RoleError:
        # A permission of this release made after the migrations (post_migrate) makes the whole
        # seed wait for `manage.py seed_roles`; taking the sending away need not wait.
        app_label, _, codename = INGEST_MESSAGES.partition(".")
        send = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        for group in Group.objects.filter(name__in=(OPERATOR, APPROVER)):
            group.permissions.remove(*send)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_auditor_takes_checkpoints"),
        # What this writes besides the accounts: the audit trail, and the rights' tables.
        ("audit", "0002_keyed_chain"),
        ("access", "0003_ingest_rights"),
    ]

    operations = [
        migrations.RunPython(_to_the_rule, reverse_code=migrations.RunPython.noop),
    ]
