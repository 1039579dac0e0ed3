"""The application role sends messages in (POST /api/v1/messages): installs seeded before it got
that permission get it here, by running the roles' seed again (console.accounts.roles), so that
their producers' service accounts stop getting 403.

With the real models, not the historical ones, on purpose: the change to what a role holds goes
to the audit trail through console.access's signals, as any other route's does (the actor is the
server account that ran `migrate`). A database made from scratch has no roles yet, and
`manage.py seed_roles` (or seed_demo) makes them with everything."""

from django.db import migrations


def _seed_again(apps, schema_editor):
    from django.contrib.auth.models import Group, Permission

    from console.accounts.roles import APPLICATION, RoleError, roles_seed
    from console.permissions import INGEST_MESSAGES

    if not Group.objects.filter(name=APPLICATION).exists():
        return  # never seeded: seed_roles gives the role everything when it makes it
    try:
        roles_seed()
    except RoleError:
        # A permission of this release is made after the migrations (post_migrate), so the whole
        # seed waits for `manage.py seed_roles`, run on each release; the sending does not.
        app_label, _, codename = INGEST_MESSAGES.partition(".")
        send = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        if send.exists():
            Group.objects.get(name=APPLICATION).permissions.add(send.get())


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_address_throttle"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("ingest", "0001_initial"),
        # What the seed writes besides the roles: the audit trail and the approver cool-down.
        ("audit", "0002_keyed_chain"),
        ("access", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(_seed_again, reverse_code=migrations.RunPython.noop),
    ]
