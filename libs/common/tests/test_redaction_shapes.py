"""What redaction keeps and what it replaces, class by class: the name, flag, scheme or key stays
(it is part of the diagnosis), the credential goes. Then properties: credentials generated in the
known shapes never survive, generated look-alikes come back unchanged."""

from __future__ import annotations

import base64
import json
import string
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth_common.redact import redact_text

R = "[REDACTED]"


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    expect: str


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


_PEM_KEY = _b64("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx9Q7ZlYdPq3mB5\n-----END RSA PRIVATE KEY-----\n")
_DOCKER = _b64('{"auths":{"reg.io":{"auth":"Y2k6WngxOGtx"}}}')
_PEM_CERT = _b64("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUEp\n-----END CERTIFICATE-----\n")

CASES = [
    # URLs and connection strings
    Case("url empty user", "redis://:Zx81kqplM2@redis:6379/0", f"redis://:{R}@redis:6379/0"),
    Case("url user", "amqp://app:Zx81kqplM2@mq:5672/", f"amqp://app:{R}@mq:5672/"),
    Case("url with @ in password", "postgres://app:Zx8@1kq@db/app", f"postgres://app:{R}@db/app"),
    Case("url without password", "ssh://git@github.com/org/repo.git", "ssh://git@github.com/org/repo.git"),
    Case("jdbc oracle", "jdbc:oracle:thin:scott/Zx81kqplM2@db:1521/ORCL", f"jdbc:oracle:thin:scott/{R}@db:1521/ORCL"),
    Case("go dsn", "app:Zx81kqplM2@tcp(db:3306)/app", f"app:{R}@tcp(db:3306)/app"),
    Case("ado.net", "Server=db;User Id=sa;Password=Zx81kqplM2;", f"Server=db;User Id=sa;Password={R};"),
    # names that say secret
    Case("DB_PASS", "DB_PASS=Zx81kqplM2", f"DB_PASS={R}"),
    Case("ADMIN_PW", "ADMIN_PW=Zx81kqplM2", f"ADMIN_PW={R}"),
    Case("MYSQL_PWD", "MYSQL_PWD=Zx81kqplM2", f"MYSQL_PWD={R}"),
    Case("PGPASSWORD prefix", "PGPASSWORD=Zx81kqplM2 psql -h db", f"PGPASSWORD={R} psql -h db"),
    Case("*_SECRET_KEY", "DJANGO_SECRET_KEY='Zx81kqplM2'", f"DJANGO_SECRET_KEY='{R}'"),
    Case("*_CREDENTIALS", "AZURE_CREDENTIALS=Zx81kqplM2", f"AZURE_CREDENTIALS={R}"),
    Case("pass: yaml", "  pass: Zx81kqplM2\n  user: app\n", f"  pass: {R}\n  user: app\n"),
    Case("passwd json", '{"passwd": "Zx81kqplM2"}', f'{{"passwd": "{R}"}}'),
    Case("quoted value with spaces", 'password: "Zx81 kqpl M2"', f'password: "{R}"'),
    # split and short arguments
    Case("--db-password X", "--db-password Zx81kqplM2 --port 80", f"--db-password {R} --port 80"),
    Case("--token=X", "kubectl --token=Zx81kqplM2 get pods", f"kubectl --token={R} get pods"),
    Case("args array", '["--client-secret", "Zx81kqplM2"]', f'["--client-secret", "{R}"]'),
    Case("mysql -pX", "mysql -uroot -pZx81kqplM2 app", f"mysql -uroot -p{R} app"),
    Case("mysql -P port stays", "mysql -P 3306 -p app", "mysql -P 3306 -p app"),
    Case("docker login -p X", "docker login -u ci -p Zx81kqplM2 reg.io", f"docker login -u ci -p {R} reg.io"),
    Case("docker run -p stays", "docker run -p 8080:80 nginx", "docker run -p 8080:80 nginx"),
    Case("curl -u", "curl -u admin:Zx81kqplM2 http://x", f"curl -u admin:{R} http://x"),
    # Authorization
    Case("raw Authorization", "Authorization: Zx81kqplM2Zx81kqplM2", f"Authorization: {R}"),
    Case("Basic keeps the scheme", "Authorization: Basic YWRtaW46WHg4MWtx", f"Authorization: Basic {R}"),
    Case("authorization=", "authorization=Zx81kqplM2", f"authorization={R}"),
    Case("Digest: the response", 'Authorization: Digest username="bob", response="6629fae49393a053"',
         f'Authorization: Digest username="bob", response="{R}"'),
    Case("header missing", "Authorization header missing", "Authorization header missing"),
    # base64 PEM and Docker config
    Case("base64 private key", f"tls.key: {_PEM_KEY}", f"tls.key: {R}"),
    Case("base64 certificate stays", f"tls.crt: {_PEM_CERT}", f"tls.crt: {_PEM_CERT}"),
    Case("dockerconfigjson", f".dockerconfigjson: {_DOCKER}", f".dockerconfigjson: {R}"),
    # Secret data written as text: keys stay, values go
    Case("secret yaml", "apiVersion: v1\ndata:\n  api-key: WngxOGtx\n  user: YXBw\nkind: Secret\n",
         f"apiVersion: v1\ndata:\n  api-key: {R}\n  user: {R}\nkind: Secret\n"),
    Case("configmap yaml stays", "apiVersion: v1\ndata:\n  mode: fast\nkind: ConfigMap\n",
         "apiVersion: v1\ndata:\n  mode: fast\nkind: ConfigMap\n"),
    Case("secret json", '{"kind": "Secret", "data": {"k": "WngxOGtx"}}', f'{{"kind": "Secret", "data": {{"k": "{R}"}}}}'),
    # names of secrets are not credentials
    Case("secret not found", 'secret "checkout-api-db" not found', 'secret "checkout-api-db" not found'),
    Case("secretKeyRef", "secretKeyRef: {name: api-keys, key: password}", "secretKeyRef: {name: api-keys, key: password}"),
    Case("password file", "--password-file=/etc/x", "--password-file=/etc/x"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_what_stays_and_what_goes(case: Case) -> None:
    assert redact_text(case.text)[0] == case.expect


def test_last_applied_of_a_secret_is_replaced_whole() -> None:
    inner = json.dumps({"apiVersion": "v1", "data": {"anything": "WngxOGtxcGxNMg=="}, "kind": "Secret",
                        "metadata": {"name": "db"}})
    doc = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": inner}}}
    out = json.loads(redact_text(json.dumps(doc))[0])
    assert out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == R


def test_last_applied_of_a_deployment_keeps_its_spec() -> None:
    inner = json.dumps({"kind": "Deployment", "spec": {"replicas": 3, "template": {"spec": {"containers": [
        {"name": "api", "image": "api:1.2", "env": [{"name": "DB_PASS", "value": "Zx81kqplM2"},
                                                    {"name": "MODE", "value": "fast"}]}]}}}})
    doc = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": inner}}}
    out = json.loads(redact_text(json.dumps(doc))[0])
    applied = json.loads(out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    env = applied["spec"]["template"]["spec"]["containers"][0]["env"]
    assert applied["spec"]["replicas"] == 3 and env == [{"name": "DB_PASS", "value": R}, {"name": "MODE", "value": "fast"}]


# ---- properties ---------------------------------------------------------------------------------

# A generated credential: random, with a digit (an all-letter value followed by more words reads
# as English: `token: expired now` — see the look-alikes).
SECRETS = st.tuples(
    st.text(alphabet=string.ascii_letters + string.digits, min_size=7, max_size=40),
    st.sampled_from(string.digits),
).map(lambda t: t[0][: len(t[0]) // 2] + t[1] + t[0][len(t[0]) // 2 :])
PREFIXES = st.sampled_from(["DB", "ADMIN", "APP", "REDIS", "SMTP", "LDAP_BIND", "MONGO_ROOT", "API", "SVC"])
SUFFIXES = st.sampled_from(["PASS", "PW", "PWD", "PASSWORD", "PASSPHRASE", "SECRET_KEY", "CREDENTIALS", "TOKEN",
                            "API_KEY", "SECRET", "AUTH_TOKEN", "CLIENT_SECRET"])
NAMES = st.builds(lambda p, s: f"{p}_{s}", PREFIXES, SUFFIXES) | st.sampled_from(["PGPASS", "PGPASSWORD", "MYSQL_PWD"])
FLAGS = NAMES.map(lambda n: "--" + n.lower().replace("_", "-"))
SCHEMES = st.sampled_from(["redis", "rediss", "postgres", "postgresql", "mysql", "mongodb", "mongodb+srv", "amqp", "amqps",
                           "nats", "https", "smtp"])
USERS = st.sampled_from(["", "app", "default", "admin", "svc_1"])


@st.composite
def credentials(draw: st.DrawFn) -> tuple[str, str]:
    s = draw(SECRETS)
    shape = draw(st.integers(0, 13))
    name, flag = draw(NAMES), draw(FLAGS)
    text = [
        f"{name}={s}",
        f"export {name}='{s}'",
        f"{name}: {s}",
        json.dumps({"name": name, "value": s}),
        f"- name: {name}\n  value: {s}\n",
        f"{flag} {s} --verbose",
        f"{flag}={s}",
        json.dumps({"args": [flag, s]}),
        f"{draw(SCHEMES)}://{draw(USERS)}:{s}@host.internal:1234/db",
        f"Authorization: {draw(st.sampled_from(['Bearer', 'token', 'Basic', '']))} {s}".replace(":  ", ": "),
        f"mysql -h db -uroot -p{s} app",
        f"docker login -u ci -p {s} registry.io",
        json.dumps({name.lower(): s}),
        f"apiVersion: v1\ndata:\n  {draw(st.sampled_from(['k', 'blob', 'tls.key', 'x']))}: {_b64(s)}\nkind: Secret\n",
    ][shape]
    secret = _b64(s) if shape == 13 else s
    return text, secret


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(credentials(), st.sampled_from(["raw", "json", "json2"]))
def test_generated_credentials_never_survive(cred: tuple[str, str], wrap: str) -> None:
    text, secret = cred
    if wrap == "json":
        text = json.dumps({"log": text})
    elif wrap == "json2":
        text = json.dumps({"stdout": json.dumps({"log": text})})
    out, n = redact_text(text)
    assert secret not in out and n >= 1


WORDS = st.sampled_from(["checkout", "api", "db", "password", "token", "creds", "keys", "auth", "tls", "billing",
                         "secret", "pass", "pg", "mysql", "app", "cache", "oauth", "github"])
K8S_NAMES = st.lists(WORDS, min_size=1, max_size=4).map("-".join)
HEX = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)


@st.composite
def lookalikes(draw: st.DrawFn) -> str:
    name, key, env = draw(K8S_NAMES), draw(WORDS), draw(NAMES)
    shape = draw(st.integers(0, 14))
    return [
        f'secret "{name}" not found',
        f"secretName: {name}",
        f"secretKeyRef: {{name: {name}, key: {key}}}",
        json.dumps({"name": env, "valueFrom": {"secretKeyRef": {"name": name, "key": key}}}),
        env,
        f"- name: {env}\n  valueFrom:\n    secretKeyRef:\n      name: {name}\n      key: {key}\n",
        f"{env}_FILE=/run/secrets/{name}",
        f"--{key}-file=/etc/{name}/{key}",
        f"image: registry.example.com/{name}@sha256:{draw(HEX)}",
        f"uid: {draw(st.uuids())}",
        f'resourceVersion: "{draw(st.integers(1, 10**9))}"',
        f"pod-template-hash: {draw(st.text(alphabet='bcdfghjklmnpqrstvwxz2456789', min_size=10, max_size=10))}",
        f"image: {name}:git-{draw(HEX)[:12]}",
        f'password authentication failed for user "{name}"',
        f"MountVolume.SetUp failed for volume \"{key}\" : secret \"{name}\" not found",
    ][shape]


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(lookalikes(), st.booleans())
def test_generated_lookalikes_survive(text: str, as_json: bool) -> None:
    if as_json:
        text = json.dumps({"log": text})
    assert redact_text(text) == (text, 0)
