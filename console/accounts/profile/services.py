"""One's own account, written: the e-mail address alerts go to (console.alerts sends to
`user.email`)."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from console.audit.services import audit_record

EMAIL_MAX = 254  # Django's User.email


def account_email_set(*, actor, email):
    """Set `actor`'s own e-mail address ("" removes it): checked as an address, audited with the
    one it replaces. Returns the address kept."""
    email = (email or "").strip()
    if len(email) > EMAIL_MAX:
        raise ValidationError(f"An e-mail address has at most {EMAIL_MAX} characters.")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise ValidationError(f"{email!r} is not an e-mail address.") from None
        # The domain is not case-sensitive; the part before the @ may be, so it is kept.
        local, domain = email.rsplit("@", 1)
        email = f"{local}@{domain.lower()}"
    User = get_user_model()
    with transaction.atomic():
        before = User.objects.select_for_update().get(pk=actor.pk).email
        if before == email:
            return email
        User.objects.filter(pk=actor.pk).update(email=email)
        audit_record(
            actor=actor,
            action="account.email_changed",
            target_type="user",
            target_id=actor.get_username(),
            details={"before": before, "after": email},
        )
    actor.email = email
    return email
