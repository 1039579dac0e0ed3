"""deploy/systemd: a unit for each process of the Procfile that runs the same command, starts
only once its process beats (manage.py health --wait) and is restarted by a timer when it stops
beating; systemd itself finds nothing wrong with them (systemd-analyze verify); and the web's unit
really serves: its gunicorn command, started as the unit would, answers and passes its start
check, and its workers say they stopped when systemd's SIGTERM ends it."""

import configparser
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from console.processes.models import KINDS, ProcessBeat
from tests.conftest import require_service
from tests.deploy.conftest import DEPLOY
from tests.processes.conftest import ROOT, free_port, port_open, wait_for

UNITS = DEPLOY / "systemd"
INSTALLED = "/srv/antidote"
VENV_BIN = f"{INSTALLED}/.venv/bin/"


def _unit(name):
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string((UNITS / name).read_text())
    return parser


def _procfile():
    commands = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line and not line.startswith("#"):
            kind, command = line.split(":", 1)
            commands[kind] = command.strip().removeprefix("exec ")
    return commands


def _program_words(command):
    """A command's words with its program's folder taken off and values that differ by design
    between `make run` and a service (ports, the concurrency, paths, log levels) left out."""
    words = [w.removeprefix(VENV_BIN) for w in shlex.split(command.replace("%%", "%"))]
    kept, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in ("-s", "-c", "-l", "--bind", "--workers", "--timeout"):
            skip = True
        elif not re.fullmatch(r"127\.0\.0\.1:\S+", word):
            kept.append(word)
    return kept


def test_there_is_a_unit_for_each_process_of_the_procfile():
    procfile = _procfile()

    assert set(procfile) == set(KINDS)
    for kind in KINDS:
        service = _unit(f"antidote-{kind}.service")["Service"]
        command = service["ExecStart"]
        assert command.startswith(VENV_BIN), kind
        if kind == "web":  # runserver for a developer; gunicorn serves the same application
            assert _program_words(command) == ["gunicorn", "console.wsgi"]
        else:
            assert _program_words(command) == _program_words(procfile[kind]), kind


def test_each_unit_starts_once_its_process_beats_and_a_timer_restarts_it_when_it_stops():
    for kind in KINDS:
        service = _unit(f"antidote-{kind}.service")["Service"]
        check = shlex.split(service["ExecStartPost"])
        assert check[:5] == [f"{VENV_BIN}python", "manage.py", "health", "--process", kind]
        assert "--wait" in check
        # Celery's and the consumer's main process is the one that beats; gunicorn's workers do.
        assert ("--pid" in check) == (kind != "web"), kind
        assert service["Restart"] == "on-failure"
        assert service["User"] == "antidote"

    health = _unit("antidote-health@.service")
    assert health["Unit"]["OnFailure"] == "antidote-restart@%i.service"
    assert health["Service"]["ExecStart"].endswith("manage.py health --process %i")
    assert _unit("antidote-restart@.service")["Service"]["ExecStart"] == (
        "/bin/systemctl try-restart antidote-%i.service"
    )
    assert _unit("antidote-health@.timer")["Timer"]["OnCalendar"] == "minutely"


def test_the_environment_example_sets_only_documented_settings():
    documented = set(
        re.findall(r"^\| `([A-Z_]+)`", (ROOT / "docs/reference/settings.md").read_text(), re.M)
    )
    example = (UNITS / "antidote.env.example").read_text()

    named = set(re.findall(r"^#?([A-Z_]+)=", example, re.M))
    assert named and named <= documented, named - documented


def test_systemd_finds_nothing_wrong_with_the_units(tmp_path):
    require_service("systemd-analyze (Debian's systemd package)", path="systemd-analyze")
    # As installed: this checkout in the place of /srv/antidote, an environment file of ours.
    env_file = tmp_path / "antidote.env"
    env_file.write_text("LOG_FORMAT=json\n")
    verified = []
    for unit in sorted(UNITS.glob("antidote*")):
        if unit.suffix not in (".service", ".timer", ".target"):
            continue
        (tmp_path / unit.name).write_text(
            unit.read_text()
            .replace(VENV_BIN, f"{Path(sys.executable).parent}/")
            .replace(INSTALLED, str(ROOT))
            .replace("/etc/antidote/antidote.env", str(env_file))
        )
        # A template is verified as one of its instances (systemd reads the template for it).
        verified.append(str(tmp_path / unit.name.replace("@.", "@spark.")))

    done = subprocess.run(
        [shutil.which("systemd-analyze"), "verify", "--man=no", *verified],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "notice"},
    )

    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


@pytest.mark.slow
def test_the_web_unit_serves_and_passes_its_start_check(processes, tmp_path):
    service = _unit("antidote-web.service")["Service"]
    port = free_port()
    command = [
        w.replace(VENV_BIN, f"{Path(sys.executable).parent}/")
        for w in shlex.split(service["ExecStart"])
    ]
    command[command.index("--bind") + 1] = f"127.0.0.1:{port}"
    command[command.index("--workers") + 1] = "2"
    web = processes.start_command(command, log=tmp_path / "gunicorn.log")

    check = [
        w.replace(VENV_BIN, f"{Path(sys.executable).parent}/")
        for w in shlex.split(service["ExecStartPost"])
    ]
    done = subprocess.run(
        check, cwd=ROOT, env=processes.env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr + (tmp_path / "gunicorn.log").read_text()
    assert "web process" in done.stdout and "alive" in done.stdout
    wait_for(lambda: port_open(port), timeout=60, what="gunicorn to listen")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as answer:
        assert answer.status == 200

    # Each worker beats; systemd's SIGTERM to the master stops them, and they say so.
    workers = wait_for(
        lambda: ProcessBeat.objects.filter(kind="web").count() == 2 or None,
        timeout=60,
        what="both workers' heartbeats",
    )
    assert workers
    web.send_signal(signal.SIGTERM)
    assert web.wait(timeout=60) == 0
    assert not ProcessBeat.objects.filter(kind="web", stopped_at__isnull=True).exists()
