"""Service accounts (R19): the accounts an application outside the product acts through, with API
tokens (console.accounts.tokens), and the only accounts a token acts for.

A service account holds the application role and nothing else (no other role, no permission of
its own, neither staff nor superuser) and cannot sign in: it has no usable password, and every
sign-in route refuses it (console.sso). A person's account never becomes one, and a service
account never gets a person's role: a token then never carries a person's rights.

Here, below every app that checks rights (console.access is the lowest of them), so that the rules
on roles (console.access.receivers and services), the tokens (console.accounts) and the sign-in
routes (console.sso) read one definition."""

# The role of a service account, and of nothing else (console.accounts.roles.APPLICATION).
SERVICE_ROLE = "application"
# What a refusal tells to do instead.
MAKE_ONE = "make a service account for the application on the Service tokens page"


def is_service_account(user):
    """Does `user` act only through tokens, for an application? Read from the database at each
    call (a token's authentication asks it every time): a role taken away, or a password set,
    counts at once."""
    if user.is_superuser or user.is_staff or user.has_usable_password():
        return False
    roles = list(user.groups.values_list("name", flat=True)[:2])
    if roles != [SERVICE_ROLE]:
        return False
    # An active account's own permissions through Django's cache (ModelBackend): the permission
    # check after a token's authentication reads them then without a query of its own. An
    # inactive account's are not in it (Django gives it none), so they are asked.
    if user.is_active:
        return not user.get_user_permissions()
    return not user.user_permissions.exists()


def holds_service_role(user):
    return user.groups.filter(name=SERVICE_ROLE).exists()


def sign_in_way(user):
    """How `user` could sign in, in words ("has a password"); None if they cannot."""
    if user.has_usable_password():
        return "has a password"
    if type(user).objects.filter(pk=user.pk, provider_account__isnull=False).exists():
        return "signs in through a sign-in provider"
    return None


def service_role_refusal(user):
    """Why `user` may not be given the application role (it is a person's account), or None."""
    name = user.get_username()
    others = sorted(set(user.groups.values_list("name", flat=True)) - {SERVICE_ROLE})
    if others:
        why = f"holds the role {', '.join(others)}"
    elif user.is_superuser or user.is_staff:
        why = "is staff or superuser"
    elif user.user_permissions.exists():
        why = "holds permissions of its own"
    else:
        why = sign_in_way(user)
    if why is None:
        return None
    return (
        f"{name} {why}: the application role is for service accounts only, which hold nothing "
        f"else and cannot sign in ({MAKE_ONE})"
    )


def role_refusal(user, role_name):
    """Why the role named `role_name` may not be given to `user`, or None: the application role
    only to a service account, and a service account no other role."""
    if role_name == SERVICE_ROLE:
        return service_role_refusal(user)
    if holds_service_role(user):
        return (
            f"{user.get_username()} is a service account (the application role): it holds that "
            "role and nothing else; a person's roles go to a person's own account"
        )
    return None


def roles_refusal(user, role_names):
    """Why the roles named `role_names`, given together, may not go to `user`, or None."""
    names = set(role_names)
    if SERVICE_ROLE in names and len(names) > 1:
        return (
            "the application role is for service accounts only, which hold nothing else: not "
            f"with {', '.join(sorted(names - {SERVICE_ROLE}))}"
        )
    return next((r for name in sorted(names) if (r := role_refusal(user, name))), None)
