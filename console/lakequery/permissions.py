"""Who may see and stop a lake query (console.permissions names the permissions;
console.accounts.roles says which role holds which).

A query that searches bodies (contains, regular expression, JSON path) reveals what bodies hold,
so seeing it needs the permission to read bodies as well."""

from console.permissions import CANCEL_ANY_QUERY, VIEW_BODY, VIEW_QUERIES


def may_see(user, query):
    """True if `user` may see `query`, its criteria and its result."""
    if not (user and user.is_authenticated and user.has_perm(VIEW_QUERIES)):
        return False
    return not query.body_criteria or user.has_perm(VIEW_BODY)


def may_cancel(user, query):
    """The requester may always stop their own query; CANCEL_ANY_QUERY stops anyone's."""
    return may_see(user, query) and (
        user.pk == query.requester_id or user.has_perm(CANCEL_ANY_QUERY)
    )
