"""The groups-to-roles file (SSO_GROUP_ROLES): read at every sign-in, refused whole, with where
and why, when it says something that is not a mapping to a person's roles."""

import pytest

from console.sso.mapping import GroupRolesError, group_roles_load, roles_for


def _load(tmp_path, text):
    path = tmp_path / "roles.yaml"
    path.write_text(text)
    return group_roles_load(path)


def test_groups_map_to_one_role_or_several(tmp_path):
    mapping = _load(tmp_path, "oidc:\n  ops: operator\n  leads: [operator, approver]\n")

    assert mapping == {"oidc": {"ops": ["operator"], "leads": ["operator", "approver"]}}


def test_ldap_groups_are_compared_without_regard_to_case(tmp_path, settings):
    settings.SSO_GROUP_ROLES = str(tmp_path / "roles.yaml")
    _load(tmp_path, "ldap:\n  CN=Ops,OU=Groups,DC=example,DC=com: operator\n")

    assert roles_for("ldap", ["cn=ops,ou=groups,dc=example,dc=com"]) == {
        "operator": ["cn=ops,ou=groups,dc=example,dc=com"]
    }
    assert roles_for("oidc", ["ops"]) == {}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("oidc:\n  ops: [superuser]\n", "names 'superuser', not a role a person holds"),
        ("oidc:\n  robots: application\n", "names 'application', not a role a person holds"),
        ("okta:\n  ops: operator\n", "unknown provider 'okta'"),
        ("oidc:\n  ops: []\n", "must name one role or a list"),
        ("oidc: [ops]\n", "oidc must map groups to roles"),
        ("oidc: {ops: [operator\n", "is not YAML"),
    ],
)
def test_a_mistake_is_refused_with_where_it_is(tmp_path, text, said):
    with pytest.raises(GroupRolesError, match=said.replace("[", r"\[")):
        _load(tmp_path, text)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(GroupRolesError, match="cannot read"):
        group_roles_load(tmp_path / "nowhere.yaml")


def test_without_a_file_no_group_gives_a_role(settings):
    settings.SSO_GROUP_ROLES = ""

    assert roles_for("oidc", ["ops"]) == {}


def test_manage_py_check_refuses_a_broken_file(tmp_path, settings):
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    path = tmp_path / "roles.yaml"
    path.write_text("oidc:\n  ops: [root]\n")
    settings.SSO_GROUP_ROLES = str(path)

    with pytest.raises(SystemCheckError, match=r"sso\.E001"):
        call_command("check")
