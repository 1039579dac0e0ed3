"""The permissions of lake queries, by name (console.accounts.roles says which role holds which).

Seeing a query and its result, and running one, are permissions of their own. A query that
searches bodies (contains, regular expression, JSON path) reveals what bodies hold, so running it
or seeing it needs the permission to read bodies as well."""

from console.browse.permissions import VIEW_BODY

VIEW_QUERIES = "lakequery.view_lakequery"
RUN_QUERIES = "lakequery.add_lakequery"
# Stop anyone's query (the requester may always stop their own).
CANCEL_ANY = "lakequery.change_lakequery"


def may_see(user, query):
    """True if `user` may see `query`, its criteria and its result."""
    if not (user and user.is_authenticated and user.has_perm(VIEW_QUERIES)):
        return False
    return not query.body_criteria or user.has_perm(VIEW_BODY)


def may_cancel(user, query):
    return may_see(user, query) and (user.pk == query.requester_id or user.has_perm(CANCEL_ANY))
