"""Which environment variables configuration may name (R19: secrets are named only from a
documented allow-list and never leave except to the party they belong to).

Configuration names variables instead of holding secrets: a webhook's `secret_env` (its signing
secret, or PagerDuty's routing key, which is sent to the webhook's URL), a queue's handler
options `url_env` and `secret_env` (the HTTP sink's URL and signing secret, a broker sink's
URL), a broker source's `url_env`. A name is a read of the process's environment, and the
product's own secrets live there too: a webhook naming SECRET_KEY would post it to any URL, a
RabbitMQ sink naming CELERY_BROKER_URL would publish messages into the product's task queue.

- The product's own variables are never named by anything: every variable console/settings.py
  reads (found in its source, `settings_variables`), and for alerts every `ANTIDOTE_*` variable
  outside `ANTIDOTE_ALERT_` (the brokers' default URL variables, the HTTP sink's secret).
- A webhook's secret (sent to an address an administrator types) may name only a variable under
  ALERT_PREFIX or one listed in ALERTS_SECRET_ENV_ALLOWED.
- A queue's or a broker source's variable (written in the deployment's queue files, which are
  its code, or by a superuser in the Django admin) goes to the broker or receiver its queue
  names: any name but the product's own.

Each rule returns why a name is refused, in words, or None.
"""

import ast
import functools
import importlib
import os
import re
from pathlib import Path

from django.conf import settings

ALERT_PREFIX = "ANTIDOTE_ALERT_"
# The product's namespace: its brokers' default variables (ANTIDOTE_AMQP_URL, ...), the HTTP
# sink's default secret (ANTIDOTE_WEBHOOK_SECRET). Alerts have ALERT_PREFIX of it.
PRODUCT_PREFIX = "ANTIDOTE_"
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,99}")
# The product's settings module (the one DJANGO_SETTINGS_MODULE names in every process).
SETTINGS_MODULE = "console.settings"
# The functions of console/settings.py whose first argument names the variable they read.
_READERS = re.compile(r"env[a-z]*|_key|getenv|get")


def _variable_named(node, module):
    """The variable name `node` (a call's first argument, a subscript) stands for: a literal, or
    a module-level name of the settings module holding one; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        value = getattr(module, node.id, None)
        if isinstance(value, str) and ENV_NAME.fullmatch(value):
            return value
    return None


def _reads_environ(node):
    # os.environ.get(...), os.environ[...], os.getenv(...): the environment itself.
    text = ast.unparse(node)
    return text in ("os.environ", "environ", "os.getenv", "getenv") or text.startswith(
        "os.environ."
    )


def variables_read(source, module):
    """(names, unresolved): the variables `source` (a settings module's text) reads through its
    env helpers (envbool, envint, ..., _key), os.environ and os.getenv, at module level (the
    helpers' own bodies read a parameter); `unresolved` counts the reads whose name is not
    written where it is read, for a test to keep at 0."""
    names, unresolved = set(), 0
    tree = ast.parse(source)
    for node in ast.walk(tree):
        argument = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            helper = isinstance(func, ast.Name) and _READERS.fullmatch(called)
            if helper or (called in ("get", "getenv") and _reads_environ(func)):
                argument = node.args[0]
        elif isinstance(node, ast.Subscript) and _reads_environ(node.value):
            argument = node.slice
        if argument is None:
            continue
        name = _variable_named(argument, module)
        if name is not None:
            names.add(name)
        elif not (isinstance(argument, ast.Name) and not hasattr(module, argument.id)):
            unresolved += 1
    return names, unresolved


@functools.cache
def settings_variables():
    """Every environment variable console/settings.py reads: the product's own settings."""
    module = importlib.import_module(SETTINGS_MODULE)
    return frozenset(variables_read(Path(module.__file__).read_text(encoding="utf-8"), module)[0])


def _syntax_refusal(name):
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        return "an environment variable's name: capital letters, digits and _, from a letter"
    return None


def product_refusal(name):
    """Why `name` may not be named by any configuration: it is one of the product's settings."""
    if name in settings_variables():
        return (
            f"{name} is one of Antidote's own settings (docs/reference/settings.md): no "
            "configuration may name it, so that it is never sent anywhere"
        )
    return None


def alert_secret_refusal(name):
    """Why a webhook may not take its secret from `name` (None: it may)."""
    refusal = _syntax_refusal(name) or product_refusal(name)
    if refusal:
        return refusal
    if name.startswith(ALERT_PREFIX):
        return None
    if name.startswith(PRODUCT_PREFIX):
        return (
            f"{name} belongs to another part of Antidote (brokers, the HTTP sink): an alert's "
            f"secret is in a variable starting with {ALERT_PREFIX}"
        )
    if name in settings.ALERTS_SECRET_ENV_ALLOWED:
        return None
    return (
        f"an alert's secret is read only from a variable starting with {ALERT_PREFIX}, or one "
        f"listed in ALERTS_SECRET_ENV_ALLOWED; {name} is neither"
    )


def broker_variable_refusal(name):
    """Why a queue's handler or a broker source may not read `name` (None: it may)."""
    return _syntax_refusal(name) or product_refusal(name)


def handler_options_refusals(options):
    """Why each variable a queue's handler options name (every option ending in `_env`) may not
    be read: ["url_env: ...", ...]."""
    refusals = []
    for key, value in sorted((options or {}).items()):
        if isinstance(key, str) and key.endswith("_env") and isinstance(value, str):
            refusal = broker_variable_refusal(value)
            if refusal:
                refusals.append(f"{key}: {refusal}")
    return refusals


def secret_state(name):
    """What may be shown of a webhook's secret: "set" or "not set" in this process, never
    anything derived from its value."""
    return "set" if os.environ.get(name) else "not set"
