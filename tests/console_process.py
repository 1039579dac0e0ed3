"""The console started in a process of its own, as an operator would start it, with the
environment a test gives it: its settings are read once, at start."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPLOY_CHECK = ["manage.py", "check", "--deploy", "--fail-level", "WARNING"]


def console_python(code, *, var_dir, unset=(), **env):
    """`python -c code` under the console's settings, in this test run's environment without
    the variables in `unset` (a developer's or CI's, which would change what the test sees),
    with `env` on top."""
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    environ.update(DJANGO_SETTINGS_MODULE="console.settings", VAR_DIR=str(var_dir), **env)
    return _run(["-c", code], environ)


def deploy_check(env):
    """`manage.py check --deploy`, failing on warnings too, with `env` alone for environment."""
    return _run(DEPLOY_CHECK, env)


def _run(arguments, env):
    return subprocess.run(
        [sys.executable, *arguments],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
