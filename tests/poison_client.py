"""The poison list's client for outside applications, as they get it: the one file the console
serves at /static/clients/antidote_poison.py, imported by its path (it is no package of the
project), talking to a live server with a user's API token."""

import functools
import importlib.util
from pathlib import Path

from rest_framework.authtoken.models import Token

CLIENT = Path(__file__).resolve().parent.parent / "static" / "clients" / "antidote_poison.py"


@functools.cache
def client_module():
    spec = importlib.util.spec_from_file_location("antidote_poison", CLIENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def poison_list(live_server, user, **options):
    """A PoisonList of the client module, signed in as `user` with a fresh token."""
    token, _ = Token.objects.get_or_create(user=user)
    return client_module().PoisonList(live_server.url, token.key, **options)
