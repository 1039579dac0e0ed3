"""The poison list's client for outside applications, as they get it: the one file the console
serves at /static/clients/antidote_poison.py, imported by its path (it is no package of the
project), talking to a live server with a service account's API token."""

import functools
import importlib.util
from pathlib import Path

from console.accounts.tokens.services import token_create

CLIENT = Path(__file__).resolve().parent.parent / "static" / "clients" / "antidote_poison.py"


@functools.cache
def client_module():
    spec = importlib.util.spec_from_file_location("antidote_poison", CLIENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def poison_list(live_server, user, **options):
    """A PoisonList of the client module, calling as the service account `user` with a fresh
    token (a token acts only for a service account: R19)."""
    _, token = token_create(actor="command:tests", user=user, name="poison list client")
    return client_module().PoisonList(live_server.url, token, **options)
