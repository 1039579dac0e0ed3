"""The roles get the standing rules' rights (console.accounts.roles: everyone who sees the
requests sees the rules; approvers and administrators propose and approve them): installs seeded
before the rules get them here, by running the roles' seed again, as accounts 0005 does. The
rights are made first, since Django makes an app's permissions only after every migration."""

from django.db import migrations


def _seed_again(apps, schema_editor):
    from django.apps import apps as global_apps
    from django.contrib.auth.management import create_permissions
    from django.contrib.auth.models import Group, Permission

    from console.accounts.roles import ADMIN, ROLE_PERMISSIONS, RoleError, roles_seed

    if not Group.objects.filter(name=ADMIN).exists():
        return  # never seeded: seed_roles gives the roles everything when it makes them
    create_permissions(global_apps.get_app_config("rules"), verbosity=0)
    try:
        roles_seed()
    except RoleError:
        # Another app's permission of this release, made after the migrations, makes the whole
        # seed wait for `manage.py seed_roles`; the rules' rights need not.
        for role, names in ROLE_PERMISSIONS.items():
            codenames = [n.partition(".")[2] for n in names if n.startswith("rules.")]
            group = Group.objects.filter(name=role).first()
            if group is not None and codenames:
                group.permissions.add(
                    *Permission.objects.filter(
                        content_type__app_label="rules", codename__in=codenames
                    )
                )


class Migration(migrations.Migration):
    dependencies = [
        ("rules", "0001_initial"),
        ("accounts", "0006_tokens_for_service_accounts_only"),
        ("notes", "0002_group_lifecycle"),
    ]

    operations = [
        migrations.RunPython(_seed_again, reverse_code=migrations.RunPython.noop),
    ]
