"""The directory's periodic check (LDAP_CHECK_MINUTES), on the default worker."""

from console.celery_task import console_task


@console_task("workers.tasks.directory_accounts_check_task")
def directory_accounts_check_task():
    """Deactivate the accounts whose directory entry is gone (console.sso.directory)."""
    from django.conf import settings

    if not settings.LDAP_SERVER_URI:
        return None
    from console.sso.directory import directory_accounts_check

    return directory_accounts_check()
