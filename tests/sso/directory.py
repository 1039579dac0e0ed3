"""A real LDAP directory for the tests: Debian's slapd, started by the test with its own
configuration and data folders on a free port (never the machine's own slapd), refusing any
operation but STARTTLS before TLS (olcSecurity tls=1), on a certificate the test makes. People
and groups (groupOfNames) are added and deleted with python-ldap as the directory's
administrator."""

import shutil
import subprocess
import time
from pathlib import Path

from tests.certificates import self_signed
from tests.conftest import require_service
from tests.processes.conftest import free_port
from tests.sso.provider import server_stop

SLAPD = "/usr/sbin/slapd"
SLAPADD = "/usr/sbin/slapadd"
SCHEMAS = ("core", "cosine", "inetorgperson", "nis")
BASE = "dc=example,dc=com"
ADMIN_DN = f"cn=admin,{BASE}"
ADMIN_PASSWORD = "directory-admin-password"
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"
# The account Antidote binds with to search: read-only, as a company gives it.
READER_DN = f"cn=antidote,{BASE}"
READER_PASSWORD = "antidote-reader-password"


class Directory:
    def __init__(self, folder):
        self.folder = Path(folder)
        self.port = free_port()
        self.uri = f"ldap://127.0.0.1:{self.port}"
        self.process = None

    def start(self):
        require_service("slapd (Debian's slapd package)", path=SLAPD)
        try:
            import ldap  # noqa: F401
        except ImportError:
            require_service("python-ldap (requirements-ldap.txt)", path="/nonexistent")
        config, data = self.folder / "slapd.d", self.folder / "data"
        for folder in (config, data):
            folder.mkdir(parents=True)
        self.ca_file, key_file = self_signed(self.folder, "127.0.0.1")
        includes = "\n".join(f"include: file:///etc/ldap/schema/{s}.ldif" for s in SCHEMAS)
        ldif = f"""\
dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: {self.folder}/slapd.pid
olcTLSCertificateFile: {self.ca_file}
olcTLSCertificateKeyFile: {key_file}
olcSecurity: tls=1

dn: cn=module{{0}},cn=config
objectClass: olcModuleList
cn: module{{0}}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

{includes}

dn: olcDatabase={{0}}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {{0}}config
olcAccess: {{0}}to * by * none

dn: olcDatabase={{1}}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {{1}}mdb
olcSuffix: {BASE}
olcDbDirectory: {data}
olcRootDN: {ADMIN_DN}
olcRootPW: {ADMIN_PASSWORD}
olcAccess: {{0}}to attrs=userPassword by self read by anonymous auth by * none
olcAccess: {{1}}to * by users read by * none
"""
        (self.folder / "config.ldif").write_text(ldif)
        subprocess.run(
            [SLAPADD, "-n0", "-F", str(config), "-l", str(self.folder / "config.ldif")],
            check=True,
            capture_output=True,
        )
        self.log = open(self.folder / "slapd.log", "wb")  # noqa: SIM115 (closed in stop)
        # -d 0: in the foreground, so the test holds the process; no debug output.
        self.process = subprocess.Popen(
            [SLAPD, "-d", "0", "-F", str(config), "-h", self.uri + "/"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self._wait()
        self._seed()
        return self

    def _wait(self):
        import ldap

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"slapd exited: {self.read_log()}")
            try:
                self.admin()
                return
            except ldap.SERVER_DOWN:
                time.sleep(0.2)
        raise AssertionError(f"slapd did not answer: {self.read_log()}")

    def read_log(self):
        return (self.folder / "slapd.log").read_text(errors="replace")[-3000:]

    def admin(self):
        import ldap

        connection = ldap.initialize(self.uri)
        connection.set_option(ldap.OPT_X_TLS_CACERTFILE, str(self.ca_file))
        connection.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
        connection.start_tls_s()
        connection.simple_bind_s(ADMIN_DN, ADMIN_PASSWORD)
        return connection

    def _add(self, dn, **attrs):
        import ldap.modlist

        entry = {
            k: [v.encode() for v in (vs if isinstance(vs, list) else [vs])]
            for k, vs in attrs.items()
        }
        self.admin().add_s(dn, ldap.modlist.addModlist(entry))

    def _seed(self):
        self._add(BASE, objectClass=["dcObject", "organization"], dc="example", o="Example")
        self._add(PEOPLE, objectClass="organizationalUnit", ou="people")
        self._add(GROUPS, objectClass="organizationalUnit", ou="groups")
        self._add(
            READER_DN,
            objectClass=["organizationalRole", "simpleSecurityObject"],
            cn="antidote",
            userPassword=READER_PASSWORD,
        )

    def person(self, uid, *, password, groups=(), name=None, email=None):
        """A person, and their membership of `groups` (cn names, made when missing)."""
        name = name or uid.title()
        first, _, last = name.partition(" ")
        dn = f"uid={uid},{PEOPLE}"
        self._add(
            dn,
            objectClass="inetOrgPerson",
            uid=uid,
            cn=name,
            givenName=first,
            sn=last or first,
            mail=email or f"{uid}@example.com",
            userPassword=password,
        )
        for group in groups:
            self.join(uid, group)
        return dn

    def group_dn(self, cn):
        return f"cn={cn},{GROUPS}"

    def join(self, uid, group):
        import ldap

        member = f"uid={uid},{PEOPLE}".encode()
        try:
            # groupOfNames must keep a member: the directory's administrator, as directories do.
            self._add(
                self.group_dn(group),
                objectClass="groupOfNames",
                cn=group,
                member=[member.decode(), ADMIN_DN],
            )
        except ldap.ALREADY_EXISTS:
            self.admin().modify_s(self.group_dn(group), [(ldap.MOD_ADD, "member", [member])])

    def leave(self, uid, group):
        import ldap

        member = f"uid={uid},{PEOPLE}".encode()
        self.admin().modify_s(self.group_dn(group), [(ldap.MOD_DELETE, "member", [member])])

    def delete(self, uid):
        """The person leaves the company: their entry is deleted."""
        self.admin().delete_s(f"uid={uid},{PEOPLE}")

    def stop(self):
        if self.process is not None:
            server_stop(self.process)
            self.log.close()
            shutil.rmtree(self.folder / "data", ignore_errors=True)

    def settings(self, settings, **extra):
        """Point the console at this directory (STARTTLS, trusting the test's certificate)."""
        settings.LDAP_SERVER_URI = self.uri
        settings.LDAP_START_TLS = True
        settings.LDAP_CA_FILE = str(self.ca_file)
        settings.LDAP_BIND_DN = READER_DN
        settings.LDAP_BIND_PASSWORD = READER_PASSWORD
        settings.LDAP_USER_SEARCH_BASE = PEOPLE
        settings.LDAP_USER_FILTER = "(uid=%(user)s)"
        settings.LDAP_GROUP_SEARCH_BASE = GROUPS
        settings.LDAP_GROUP_TYPE = "groupOfNames"
        for name, value in extra.items():
            setattr(settings, name, value)
