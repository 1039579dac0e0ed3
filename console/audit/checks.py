"""`manage.py check --deploy`: the audit key must be production's own, and long enough."""

from pathlib import Path

from django.conf import settings
from django.core.checks import Warning

KEY_LENGTH_MIN = 32


def _generated_key():
    # settings._key() writes it there when AUDIT_KEY is unset (embedded mode).
    keyfile = Path(settings.VAR_DIR) / "audit_key"
    try:
        return keyfile.read_text().strip()
    except OSError:
        return None


def audit_key_check(app_configs=None, **kwargs):
    key = settings.AUDIT_KEY
    if key == _generated_key():
        return [
            Warning(
                "AUDIT_KEY is the key generated for embedded use, kept in VAR_DIR beside the data.",
                hint="Set AUDIT_KEY in the environment to a secret of at least "
                f"{KEY_LENGTH_MIN} characters that the database's hosts do not keep.",
                id="audit.W001",
            )
        ]
    if len(key) < KEY_LENGTH_MIN:
        return [
            Warning(
                f"AUDIT_KEY is shorter than {KEY_LENGTH_MIN} characters.",
                hint="Set AUDIT_KEY to a longer random secret; keep the old one in "
                "AUDIT_KEYS_OLD to verify the entries it signed.",
                id="audit.W002",
            )
        ]
    return []
