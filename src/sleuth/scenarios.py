"""Offline investigations over snapshots (DESIGN §3, §4): simcluster and kube-mcp in-process on
loopback, the caller's scope from SubjectAccessReviews against simcluster, and the same
``sleuth_agent.investigate()`` the agent service runs. Also the scenario corpus: loading
``scenarios/*/scenario.yaml`` and scoring a result against its ``expect``.

Used by ``sleuth investigate``, ``make bench`` (``sleuth.benches.scenarios``) and
tests/test_scenarios.py.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from sleuth_common.config import ClusterSettings, IdentitySettings, McpServerSettings
from sleuth_common.messages import (
    CLUSTER_KINDS,
    AlertRef,
    ClusterScope,
    InvestigationJob,
    InvestigationResult,
    Requester,
    ScopeReply,
)

__all__ = [
    "OfflineCluster",
    "Outcome",
    "Scenario",
    "alerts_from_payload",
    "first_contact_sets",
    "holdout_set",
    "is_holdout",
    "load_scenarios",
    "offline_cluster",
    "per_family",
    "run_corpus",
    "score",
    "split_holdout",
    "summarize",
    "summary_line",
]

READER_USER = "sleuth-reader"
AUTHZ_USER = "sleuth-authz"
OFFLINE_ADMIN_GROUPS = ("system:masters",)


@dataclass(frozen=True)
class Scenario:
    """One ``scenarios/<id>/`` directory: a snapshot plus ``scenario.yaml``."""

    path: Path
    id: str
    as_user: str | None
    question: str = ""
    alert: dict[str, Any] | None = None
    expect: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def must_pass(self) -> bool:
        return bool(self.expect.get("must_pass"))


def load_scenarios(root: Path) -> list[Scenario]:
    """Every directory under ``root`` holding both ``snapshot.yaml`` and ``scenario.yaml``."""
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        spec_file = d / "scenario.yaml"
        if not (spec_file.is_file() and (d / "snapshot.yaml").is_file()):
            continue
        spec = yaml.safe_load(spec_file.read_text(encoding="utf-8")) or {}
        out.append(
            Scenario(
                path=d,
                id=d.name,
                as_user=spec.get("as"),
                question=str(spec.get("question") or ""),
                alert=spec.get("alert"),
                expect=dict(spec.get("expect") or {}),
                source=str(spec.get("source") or ""),
            )
        )
    return out


def alerts_from_payload(payload: dict[str, Any]) -> tuple[AlertRef, ...]:
    """An Alertmanager webhook payload (or one alert, or a list of them) as ``AlertRef``s."""
    alerts = payload.get("alerts") if isinstance(payload, dict) and "alerts" in payload else payload
    if isinstance(alerts, dict):
        alerts = [alerts]
    refs = []
    for a in alerts or []:
        if not isinstance(a, dict):
            continue
        refs.append(
            AlertRef(
                labels={str(k): str(v) for k, v in (a.get("labels") or {}).items()},
                annotations={str(k): str(v) for k, v in (a.get("annotations") or {}).items()},
                status=str(a.get("status") or "firing"),
                starts_at=str(a.get("startsAt") or ""),
                fingerprint=str(a.get("fingerprint") or ""),
            )
        )
    return tuple(refs)


# -- the offline cluster --------------------------------------------------------------------------
@dataclass
class OfflineCluster:
    """A running simcluster + kube-mcp over one snapshot, and how to reach them."""

    snapshot: Path
    cluster: ClusterSettings
    users: dict[str, dict[str, Any]]
    sim: Any
    mcp: Any
    identity: IdentitySettings = field(default_factory=IdentitySettings)
    """The agent's side of signed identities (kube-mcp reads as the asker)."""
    _inventory: dict[str, list[str]] | None = field(default=None, repr=False)

    def signer(self) -> Any:
        from sleuth_common.identity import signer_from_settings

        return signer_from_settings(self.identity)

    async def inventory(self, cluster: str) -> dict[str, list[str]]:
        """The names index authz-cache would answer (``sleuth.authz.inventory``), built by the
        same code from simcluster's pods and services, read as authz-cache's identity."""
        from sleuth_authz_cache.inventory import capped_reply
        from sleuth_authz_cache.resolve import build_index

        if self._inventory is None:
            ctx = ssl.create_default_context(cafile=str(self.sim.ca_file))
            headers = {"Authorization": f"Bearer {self.sim.token(AUTHZ_USER)}"}
            async with httpx.AsyncClient(base_url=self.sim.url, verify=ctx, headers=headers, timeout=10) as http:
                pods, services = await asyncio.gather(http.get("/api/v1/pods"), http.get("/api/v1/services"))
            index = build_index(pods.json().get("items") or [], services.json().get("items") or [])
            reply = capped_reply(cluster, index.inventory, 900_000)
            self._inventory = {ns: list(names) for ns, names in reply.names.items()}
        return self._inventory

    def groups(self, user: str) -> tuple[str, ...]:
        return tuple(str(g) for g in (self.users.get(user) or {}).get("groups") or ())

    async def scope_for(self, user: str | None) -> ScopeReply:
        """The scope of ``user`` from SubjectAccessReviews against simcluster (``get pods``: once
        cluster-wide, else per namespace). ``None``: the whole cluster."""
        name = self.cluster.name
        if user is not None and user not in self.users:
            raise KeyError(f"no user {user!r} in the snapshot {self.snapshot}")
        groups = self.groups(user) if user else ()
        ctx = ssl.create_default_context(cafile=str(self.sim.ca_file))
        headers = {"Authorization": f"Bearer {self.sim.token(AUTHZ_USER)}"}
        async with httpx.AsyncClient(base_url=self.sim.url, verify=ctx, headers=headers, timeout=10) as http:

            async def allowed(ns: str | None, verb: str = "get", resource: str = "pods", group: str = "") -> bool:
                attrs = {"verb": verb, "resource": resource, "group": group, **({"namespace": ns} if ns else {})}
                body = {
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": {"user": user, "groups": list(groups), "resourceAttributes": attrs},
                }
                r = await http.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=body)
                r.raise_for_status()
                return bool((r.json().get("status") or {}).get("allowed"))

            r = await http.get("/api/v1/namespaces")
            r.raise_for_status()
            names = sorted(str(i["metadata"]["name"]) for i in r.json().get("items") or [])
            everything = ClusterScope(namespaces=tuple(names), cluster_wide=True, cluster_kinds=tuple(CLUSTER_KINDS),
                                      secret_namespaces=tuple(names))
            if user is None:
                return ScopeReply(user="offline", clusters={name: everything})
            if await allowed(None):
                return ScopeReply(user=user, groups=groups, clusters={name: everything})
            oks = await asyncio.gather(*(allowed(ns) for ns in names))
            mine = tuple(ns for ns, ok in zip(names, oks, strict=True) if ok)
            # What the filter needs besides namespaces (as authz-cache resolves it): cluster-scoped
            # kinds the user may list, and where they may read Secrets.
            kinds_ok = await asyncio.gather(*(allowed(None, "list", k, g) for k, g in CLUSTER_KINDS.items()))
            secrets_ok = await asyncio.gather(*(allowed(ns, "get", "secrets") for ns in mine))
            kinds = tuple(k for k, ok in zip(CLUSTER_KINDS, kinds_ok, strict=True) if ok)
            secret_ns = tuple(ns for ns, ok in zip(mine, secrets_ok, strict=True) if ok)
        if not mine:
            return ScopeReply(user=user, groups=groups, clusters={})
        return ScopeReply(user=user, groups=groups, clusters={
            name: ClusterScope(namespaces=mine, cluster_kinds=kinds, secret_namespaces=secret_ns)})


    def job(self, user: str | None, question: str = "", alert: dict[str, Any] | None = None, deadline: float = 60.0) -> InvestigationJob:
        alerts = alerts_from_payload(alert) if alert else ()
        return InvestigationJob(
            origin="alert" if alerts else "api",
            # Without --as the operator reads the whole cluster: kube-mcp impersonates an admin.
            requester=Requester(user=user or "offline", groups=self.groups(user) if user else OFFLINE_ADMIN_GROUPS),
            question=question,
            alerts=alerts,
            deadline=time.time() + deadline,
            unattended=bool(alerts),
        )


@contextmanager
def offline_cluster(
    snapshot: Path, state_dir: Path | None = None, *, impersonate: bool = True,
    kube_mcp: dict[str, Any] | None = None,
) -> Iterator[OfflineCluster]:
    """Start simcluster and kube-mcp (``sleuth-reader``, impersonating the asker) on loopback;
    stop both after. ``impersonate=False``: kube-mcp reads with the reader's own rights and only
    the filter scopes results (the old mode, kept for ``make bench``'s comparison). ``kube_mcp``:
    more of kube-mcp's settings (``{"max_items": 3}``)."""
    from sleuth_kube_mcp import Settings as KubeMcpSettings
    from sleuth_kube_mcp import serve_in_thread
    from sleuth_simcluster import SimCluster

    snapshot = Path(snapshot)
    with tempfile.TemporaryDirectory(prefix="sleuth-offline-") as tmp:
        state = Path(state_dir) if state_dir else Path(tmp)
        identity = _identity_keys(Path(tmp))
        sim = SimCluster(snapshot, state / "simcluster").start()
        try:
            # names and users as simcluster loaded them: snapshot.yaml is optional (a cluster-info
            # dump), its users may be tenants only (Sleuth's own identities are added)
            snap = sim.snapshot
            cname = snap.cluster_name
            users = {u.name: {"groups": list(u.groups)} for u in snap.users.values()}
            settings = KubeMcpSettings.model_validate(
                {"kube_mcp": {"port": 0, "kubeconfig": str(sim.kubeconfig(READER_USER)), "cluster_name": cname,
                              "require_identity": impersonate,
                              # offline without --as reads as an admin (system:masters), in-process only
                              "refused_groups": [], **(kube_mcp or {})},
                 "identity": identity.model_dump()}
            )
            mcp = serve_in_thread(settings)
            try:
                cluster = ClusterSettings(
                    name=cname,
                    aliases=list(snap.aliases),
                    api_server=sim.url,
                    ca_file=str(sim.ca_file),
                    mcp_servers=[McpServerSettings(name="kube", url=mcp.url, timeout=10.0, identity=impersonate)],
                )
                yield OfflineCluster(snapshot, cluster, users, sim, mcp, identity)
            finally:
                mcp.stop()
        finally:
            sim.stop()


def _identity_keys(directory: Path) -> IdentitySettings:
    """A fresh key pair for one offline run (signing and verifying in this process only)."""
    from sleuth_common.identity import generate_keypair

    private, public = generate_keypair()
    (directory / "agent.key").write_bytes(private)
    (directory / "agent.key").chmod(0o600)
    (directory / "agent.pub").write_bytes(public)
    return IdentitySettings(
        signing_key_file=str(directory / "agent.key"), signing_key_env="",
        verify_key_files=[str(directory / "agent.pub")], verify_keys_env="",
    )


async def investigate_offline(
    oc: OfflineCluster, user: str | None, question: str = "", alert: dict[str, Any] | None = None
) -> InvestigationResult:
    from sleuth_agent import Settings as AgentSettings
    from sleuth_agent import investigate
    from sleuth_common.mcp import use_inventory

    settings = AgentSettings(clusters=[oc.cluster], identity=oc.identity)
    scope = await oc.scope_for(user)
    with use_inventory(oc.inventory):  # the filter's names index, as the agent gets it
        return await investigate(oc.job(user, question, alert), scope, settings)


# -- scoring ----------------------------------------------------------------------------------
@dataclass
class Outcome:
    scenario: Scenario
    result: InvestigationResult | None
    wall_ms: float
    status_ok: bool = False
    family_ok: bool = False
    resource_ok: bool = False
    mentions_missing: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def passed(self) -> bool:
        return (
            self.result is not None
            and self.status_ok
            and self.family_ok
            and self.resource_ok
            and not self.mentions_missing
            and not self.leaks
        )

    @property
    def family(self) -> str:
        if self.result is None:
            return "error"
        rc = self.result.root_cause
        return rc.family if rc else self.result.status

    @property
    def wrong(self) -> bool:
        """A confident wrong family: diagnosed, with another family than expected."""
        r = self.result
        expected = str(self.scenario.expect.get("family") or "")
        return bool(
            r is not None
            and r.status == "diagnosed"
            and r.root_cause is not None
            and r.root_cause.confidence in ("high", "medium")
            and expected
            and r.root_cause.family != expected
        )

    @property
    def confident_wrong(self) -> bool:
        """Diagnosed with high confidence, and the family or the resource is not the expected one."""
        r = self.result
        if r is None or r.status != "diagnosed" or r.root_cause is None or r.root_cause.confidence != "high":
            return False
        return not (self.status_ok and self.family_ok and self.resource_ok)

    @property
    def abstained(self) -> bool:
        r = self.result
        return r is not None and r.status == "insufficient_evidence" and self.scenario.expect.get("status") != "insufficient_evidence"


def score(sc: Scenario, result: InvestigationResult | None, wall_ms: float, error: str = "") -> Outcome:
    out = Outcome(sc, result, wall_ms, error=error)
    if result is None:
        return out
    exp = sc.expect
    rc = result.root_cause
    out.status_ok = result.status == exp.get("status", result.status)
    want_family = str(exp.get("family") or "")
    out.family_ok = not want_family or (rc is not None and rc.family == want_family) or (
        want_family == result.status and rc is None
    )
    want_res = str(exp.get("resource") or "")
    out.resource_ok = not want_res or (rc is not None and rc.resource == want_res)
    text = " ".join([result.answer_markdown, rc.summary if rc else "", *(a.text + " " + a.command for a in result.actions)]).lower()
    out.mentions_missing = [m for m in exp.get("must_mention") or [] if str(m).lower() not in text]
    dumped = json.dumps(result.model_dump(mode="json")).lower()
    out.leaks = [m for m in exp.get("must_not_mention") or [] if str(m).lower() in dumped]
    return out


async def run_one(sc: Scenario) -> Outcome:
    with offline_cluster(sc.path) as oc:
        t0 = time.perf_counter()
        try:
            result = await investigate_offline(oc, sc.as_user, sc.question, sc.alert)
        except (httpx.HTTPError, KeyError, OSError) as e:
            return score(sc, None, (time.perf_counter() - t0) * 1000, error=f"{type(e).__name__}: {e}")
        return score(sc, result, (time.perf_counter() - t0) * 1000)


def run_corpus(root: Path, only: list[str] | None = None) -> list[Outcome]:
    """Run every scenario under ``root`` (one simcluster + kube-mcp each, started in ~0.1 s)."""
    outcomes = []
    for sc in load_scenarios(root):
        if only and sc.id not in only:
            continue
        outcomes.append(asyncio.run(run_one(sc)))
    return outcomes


HOLDOUT_PREFIX = "holdout"


def is_holdout(sc: Scenario) -> bool:
    """Hand-written generalisation scenarios (``scenarios/holdout-*``, see scenarios/HOLDOUT.md)."""
    return sc.path.name.startswith(HOLDOUT_PREFIX)


def holdout_set(sc: Scenario) -> str:
    """The hand-written set a holdout scenario belongs to (``holdout``, ``holdout2`` …)."""
    return sc.path.name.split("-", 1)[0] if is_holdout(sc) else ""


def first_contact_sets(root: Path) -> set[str]:
    """Holdout sets nobody has tuned the investigator to yet (``scenarios/FIRST_CONTACT``, one
    set per line): their figure is the honest measure of generalisation."""
    f = root / "FIRST_CONTACT"
    if not f.is_file():
        return set()
    return {ln.strip() for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")}


def per_family(outcomes: list[Outcome]) -> str:
    """Scenarios, correct, wrong (a confident other family), abstained — per expected family."""
    rows: dict[str, list[int]] = {}
    for o in outcomes:
        fam = str(o.scenario.expect.get("family") or o.scenario.expect.get("status") or "?")
        row = rows.setdefault(fam, [0, 0, 0, 0])
        row[0] += 1
        row[1] += o.passed
        row[2] += o.wrong
        row[3] += o.abstained
    lines = [f"{'family':26} {'n':>3} {'correct':>7} {'wrong':>5} {'abstained':>9}"]
    lines += [f"{fam:26} {r[0]:3d} {r[1]:7d} {r[2]:5d} {r[3]:9d}" for fam, r in sorted(rows.items())]
    return "\n".join(lines)


def split_holdout(outcomes: list[Outcome]) -> tuple[list[Outcome], list[Outcome]]:
    """(main corpus, holdout set)."""
    return [o for o in outcomes if not is_holdout(o.scenario)], [o for o in outcomes if is_holdout(o.scenario)]


def summary_line(label: str, s: dict[str, Any]) -> str:
    """One line of a corpus summary, e.g. ``main     61 scenarios: correct 100.0% ...``."""
    n = s["scenarios"]
    return (
        f"{label:8} {n:3d} scenarios: correct {s['correct'] * 100:5.1f}% ({round(s['correct'] * n)}/{n}), "
        f"family {s['family_top1'] * 100:5.1f}%, resource {s['resource_top1'] * 100:5.1f}%, "
        f"wrong {s['wrong'] * 100:4.1f}% (high {s['confident_wrong'] * 100:4.1f}%), abstained {s['abstained'] * 100:4.1f}%, leaks {s['leaks']}, "
        f"p50 {s['p50_ms']:.0f} ms, p95 {s['p95_ms']:.0f} ms"
    )


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    n = len(outcomes) or 1
    walls = [o.wall_ms for o in outcomes]
    calls = [float(o.result.tool_calls) for o in outcomes if o.result is not None]
    return {
        "scenarios": len(outcomes),
        "correct": sum(o.passed for o in outcomes) / n,
        "family_top1": sum(o.family_ok and o.status_ok for o in outcomes) / n,
        "resource_top1": sum(o.resource_ok and o.status_ok for o in outcomes) / n,
        "wrong": sum(o.wrong for o in outcomes) / n,
        "confident_wrong": sum(o.confident_wrong for o in outcomes) / n,
        "abstained": sum(o.abstained for o in outcomes) / n,
        "leaks": sum(len(o.leaks) for o in outcomes),
        "p50_ms": statistics.median(walls) if walls else 0.0,
        "p95_ms": _pct(walls, 0.95),
        "tool_calls_p50": statistics.median(calls) if calls else 0.0,
        "must_pass_failed": [o.scenario.id for o in outcomes if o.scenario.must_pass and not o.passed],
    }


def table(outcomes: list[Outcome]) -> str:
    lines = [f"{'scenario':44} {'ok':4} {'expected':26} {'got':26} {'ms':>6} {'calls':>5}  why"]
    for o in outcomes:
        exp = f"{o.scenario.expect.get('status', '')}/{o.scenario.expect.get('family', '')}"[:26]
        conf = o.result.root_cause.confidence if o.result is not None and o.result.root_cause else ""
        got = f"{o.result.status if o.result else 'error'}/{o.family}{'(' + conf + ')' if conf else ''}"[:26]
        why = []
        if o.error:
            why.append(o.error[:60])
        if not o.status_ok or not o.family_ok:
            why.append("status/family")
        if not o.resource_ok and o.result is not None:
            why.append(f"resource={o.result.root_cause.resource if o.result.root_cause else ''}")
        if o.mentions_missing:
            why.append("missing " + ",".join(o.mentions_missing))
        if o.leaks:
            why.append("LEAK " + ",".join(o.leaks))
        calls = o.result.tool_calls if o.result is not None else 0
        lines.append(
            f"{o.scenario.id[:44]:44} {'PASS' if o.passed else 'FAIL':4} {exp:26} {got:26} {o.wall_ms:6.0f} {calls:5d}  {'; '.join(why)}"
        )
    return "\n".join(lines)
