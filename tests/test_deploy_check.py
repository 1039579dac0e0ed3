"""Production settings pass Django's deployment checklist: `manage.py check --deploy` run the way
an operator would, in its own process, with the environment production sets."""

import os
import secrets
import string

from tests.console_process import deploy_check


def _production_env(tmp_path):
    # Production's environment only, not the test run's (DATABASE_URL, REQUIRE_SERVICES, ...).
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    alphabet = string.ascii_letters + string.digits + string.punctuation.replace("$", "")
    env.update(
        DJANGO_SETTINGS_MODULE="console.settings",
        DEBUG="false",
        SECRET_KEY="".join(secrets.choice(alphabet) for _ in range(60)),
        AUDIT_KEY=secrets.token_urlsafe(40),
        ALLOWED_HOSTS="antidote.example.com",
        HTTPS="true",
        SECURE_HSTS_PRELOAD="true",
        VAR_DIR=str(tmp_path / "var"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'console.sqlite3'}",
    )
    return env


def _check_deploy(tmp_path, **overrides):
    return deploy_check({**_production_env(tmp_path), **overrides})


def test_it_reports_nothing_with_production_settings(tmp_path):
    result = _check_deploy(tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output, output


def test_it_warns_without_https(tmp_path):
    # The check is live: the same run without HTTPS names the settings HTTPS turns on.
    result = _check_deploy(tmp_path, HTTPS="false")
    assert result.returncode != 0
    assert "security.W012" in result.stderr + result.stdout  # SESSION_COOKIE_SECURE


def test_it_warns_when_the_audit_key_is_the_generated_one_or_short(tmp_path):
    # Without AUDIT_KEY, the key is made into VAR_DIR, beside the database it should not share.
    env = {k: v for k, v in _production_env(tmp_path).items() if k != "AUDIT_KEY"}
    generated = deploy_check(env)
    assert generated.returncode != 0
    assert "audit.W001" in generated.stderr + generated.stdout

    short = _check_deploy(tmp_path, AUDIT_KEY="too-short-to-be-a-key")
    assert short.returncode != 0
    assert "audit.W002" in short.stderr + short.stdout
