"""Auditors take audit checkpoints from the audit page (console.audit.views): installs seeded
before they got that permission get it here, by running the roles' seed again, as 0004 does and
for the same reasons (the change reaches the audit trail through console.access's signals)."""

from django.db import migrations


def _seed_again(apps, schema_editor):
    from django.contrib.auth.models import Group, Permission

    from console.accounts.roles import AUDITOR, RoleError, roles_seed
    from console.permissions import CHECKPOINT_AUDIT

    if not Group.objects.filter(name=AUDITOR).exists():
        return  # never seeded: seed_roles gives the role everything when it makes it
    try:
        roles_seed()
    except RoleError:
        # A permission of this release that is made after the migrations (post_migrate) makes
        # the whole seed wait for `manage.py seed_roles`; the checkpoint need not.
        app_label, _, codename = CHECKPOINT_AUDIT.partition(".")
        take = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        if take.exists():
            Group.objects.get(name=AUDITOR).permissions.add(take.get())


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_application_sends_messages"),
    ]

    operations = [
        migrations.RunPython(_seed_again, reverse_code=migrations.RunPython.noop),
    ]
