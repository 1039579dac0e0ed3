"""`make run`'s demo answers with the console's own 404 page, not Django's debug page (issue 45,
point 7), and still serves its style sheets: the console is started, in a process of its own,
with the environment the Makefile's run target exports, and asked for a page that is not there
and for a static file."""

import json
import re

from tests.console_process import ROOT, console_python

# `run: export NAME := value` (or ?=) lines: what `make run` puts in the processes' environment.
EXPORT = re.compile(r"^run: export (\w+) \??:?= ?(.*)$", re.MULTILINE)

ASK = """
import json
import django
django.setup()
from django.core.management import call_command
from django.test import Client
call_command("migrate", verbosity=0)
client = Client(raise_request_exception=False, HTTP_HOST="127.0.0.1:8000")
answers = {}
for path in ("/no-such-page/", "/static/css/console.css"):
    answer = client.get(path)
    body = b"".join(answer.streaming_content) if answer.streaming else answer.content
    answers[path] = [answer.status_code, body.decode(errors="replace")[:4000]]
print(json.dumps(answers))
"""


def make_run_environment():
    exported = dict(EXPORT.findall((ROOT / "Makefile").read_text()))
    assert "ANTIDOTE_AMQP_URL" in exported  # the pattern still reads the run target
    return exported


def test_make_run_does_not_turn_on_django_debug_mode():
    assert make_run_environment().get("DEBUG", "0") in {"0", "false"}


def test_the_demo_answers_an_unknown_address_with_the_consoles_404_and_serves_its_styles(
    tmp_path,
):
    env = {
        name: value
        for name, value in make_run_environment().items()
        # Not the brokers: nothing here connects to them.
        if not name.startswith("ANTIDOTE_")
    }
    done = console_python(ASK, var_dir=tmp_path, unset=("DEBUG", "DATABASE_URL"), **env)
    assert done.returncode == 0, done.stderr

    answers = json.loads(done.stdout.strip().splitlines()[-1])
    status, page = answers["/no-such-page/"]
    assert status == 404
    assert 'id="not-found"' in page
    assert "Django tried these URL patterns" not in page
    status, css = answers["/static/css/console.css"]
    assert status == 200
    assert "{" in css
