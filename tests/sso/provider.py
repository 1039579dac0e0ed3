"""A real OpenID Provider for the tests: oidc-provider (tests/sso/oidc_provider) under the
machine's Node.js, on a free port, with a signing key the test holds (to sign a token of its own
with the provider's key: an expired one) and an accounts file the test rewrites (to take a person
out of a group or out of the company)."""

import json
import shutil
import subprocess
import time
from pathlib import Path

import requests
from joserfc.jwk import RSAKey

from tests.conftest import require_service
from tests.processes.conftest import free_port

HERE = Path(__file__).parent / "oidc_provider"
CLIENT_ID = "antidote"
CLIENT_SECRET = "antidote-test-client-secret"


def server_stop(process):
    """SIGTERM, then SIGKILL if it has not gone within 10 s."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class OpenIdProvider:
    def __init__(self, folder, *, redirect_base):
        self.folder = Path(folder)
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig"})
        self.accounts_file = self.folder / "accounts.json"
        self.people = {}
        self.redirect_base = redirect_base.rstrip("/")
        self.process = None

    def person(self, login, *, groups, name=None, email=None):
        """Add or change one person at the provider (read again at every look-up)."""
        self.people[login] = {
            "name": name or login.title(),
            "email": email or f"{login}@example.com",
            "groups": list(groups),
        }
        self._write_accounts()

    def forget(self, login):
        """The person leaves the company: the provider no longer knows them."""
        self.people.pop(login, None)
        self._write_accounts()

    def _write_accounts(self):
        self.accounts_file.write_text(json.dumps(self.people))

    def start(self):
        require_service("Node.js", path="node")
        if not (HERE / "node_modules" / "oidc-provider").exists():
            require_service(
                "oidc-provider (npm ci --prefix tests/sso/oidc_provider)",
                path=str(HERE / "node_modules" / "oidc-provider"),
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write_accounts()
        config = {
            "port": self.port,
            "issuer": self.issuer,
            "accountsFile": str(self.accounts_file),
            "jwks": {"keys": [self.key.as_dict(private=True)]},
            "clients": [
                {
                    "client_id": CLIENT_ID,
                    "client_secret": CLIENT_SECRET,
                    "redirect_uris": [f"{self.redirect_base}/sso/oidc/callback/"],
                    "post_logout_redirect_uris": [f"{self.redirect_base}/login/"],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                }
            ],
        }
        config_file = self.folder / "provider.json"
        config_file.write_text(json.dumps(config))
        self.log = open(self.folder / "provider.log", "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [shutil.which("node"), str(HERE / "provider.mjs"), str(config_file)],
            cwd=HERE,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"oidc-provider exited: {self.read_log()}")
            try:
                answer = requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=2)
                if answer.ok:
                    self.metadata = answer.json()
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"oidc-provider did not answer: {self.read_log()}")

    def read_log(self):
        return (self.folder / "provider.log").read_text(errors="replace")[-3000:]

    def stop(self):
        if self.process is not None:
            server_stop(self.process)
            self.log.close()

    def settings(self, settings, **extra):
        """Point the console at this provider."""
        settings.OIDC_ISSUER = self.issuer
        settings.OIDC_CLIENT_ID = CLIENT_ID
        settings.OIDC_CLIENT_SECRET = CLIENT_SECRET
        for name, value in extra.items():
            setattr(settings, name, value)
