"""Runbooks (issue 17): strict parsing with reasons, BM25 + tag search, visibility by scope."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth_agent.knowledge import RunbookError, RunbookIndex, Visibility, parse_runbook, query_tags, tokens

PG = """---
title: Postgres disk full
tags: [alert:PostgresDiskFull, family:disk_full, workload:postgres, namespace:team-a]
---
When the data volume fills, Postgres stops accepting writes.

1. Look at the alert's pod and confirm the volume usage with df.
2. Delete old WAL archives only if archiving is healthy.
3. Expand the PersistentVolumeClaim: `kubectl -n team-a patch pvc data-postgres-0 ...`
"""

CRASH = """---
title: Crash loops after a deploy
tags: [family:crashloop, alert:KubePodCrashLooping]
---
1. Read the previous container's logs.
2. Roll back the Deployment if the new image is at fault.
"""

DNS = """---
title: DNS lookups fail
tags: [family:dns]
---
CoreDNS pods OOMKilled make lookups time out; check their memory limit.
"""

B_ONLY = """---
title: Billing queue backlog in team-b
tags: [namespace:team-b, workload:billing-worker, family:crashloop]
---
1. The billing-worker crash loops when the ledger-db secret rotates; restart ledger-sync.
"""


def index() -> RunbookIndex:
    return RunbookIndex(parse_runbook(t, id=i) for i, t in
                        (("pg-disk", PG), ("crash", CRASH), ("dns", DNS), ("billing", B_ONLY)))


TEAM_A = Visibility("prod-1", frozenset({"team-a"}))
TEAM_B = Visibility("prod-1", frozenset({"team-b"}))


def test_a_runbook_parses_and_round_trips() -> None:
    rb = parse_runbook(PG, id="pg-disk", source="dir:pg.md")
    assert rb.title == "Postgres disk full"
    assert rb.tags == ("alert:postgresdiskfull", "family:disk_full", "workload:postgres", "namespace:team-a")
    assert rb.tagged("namespace") == ("team-a",) and rb.tagged("cluster") == ()
    assert rb.body.startswith("When the data volume fills")
    again = parse_runbook(rb.to_text(), id="pg-disk", source="dir:pg.md")
    assert again == rb


@pytest.mark.parametrize(("text", "reason"), [
    ("# no front matter\nbody", "no front matter"),
    ("---\ntitle: x\nbody without end", "not closed"),
    ("---\ntitle: [unclosed\n---\nbody", "not valid YAML"),
    ("---\n- a list\n---\nbody", "must be a mapping"),
    ("---\ntitle: x\nowner: me\n---\nbody", "unknown front matter key(s): owner"),
    ("---\ntags: [family:dns]\n---\nbody", "title: is missing"),
    ("---\ntitle: x\ntags: family:dns\n---\nbody", "tags: must be a list"),
    ("---\ntitle: x\ntags: ['has space']\n---\nbody", "invalid tag"),
    ("---\ntitle: x\ntags: [colour:red]\n---\nbody", "unknown tag kind 'colour'"),
    ("---\ntitle: x\n---\n\n  \n", "the body is empty"),
    ("---\ntitle: x\n---\nbell \x07 here", "control characters"),
    ("---\ntitle: " + "t" * 201 + "\n---\nbody", "longer than 200"),
    ("---\ntitle: x\n---\n" + "y" * 70_000, "too big: 70017 bytes, at most 65536"),
    ("---\ntitle: x\ntags: [namespace:team-b]\ntags: [family:dns]\n---\nbody", "key 'tags' is given twice"),
    ("---\ntitle: x\ntype: instruction\nsuppress: {family: a, family: b, workload: web}\n---\nbody",
     "key 'family' is given twice"),
])
def test_a_bad_runbook_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(RunbookError, match=None) as err:
        parse_runbook(text, id="x")
    assert reason in str(err.value)


def test_a_bad_id_is_refused() -> None:
    for bad in ("", "UPPER", "has space", "-lead", "x" * 64, "../etc"):
        with pytest.raises(RunbookError, match="invalid id"):
            parse_runbook(PG, id=bad)


def test_tag_matches_rank_above_text_and_name_the_step() -> None:
    hits = index().search("postgres volume is full, writes fail", query_tags(alert="PostgresDiskFull"),
                          visible=TEAM_A)
    assert hits[0].runbook.id == "pg-disk" and hits[0].matched_tags == ("alert:postgresdiskfull",)
    assert hits[0].step is not None and hits[0].step[0] == 3  # shares postgres and volume: the most words
    hits = index().search("confirm usage with df", query_tags(alert="PostgresDiskFull"), visible=TEAM_A)
    assert hits[0].step == (1, "Look at the alert's pod and confirm the volume usage with df.")
    # a tag match wins over a better text match
    hits = index().search("coredns lookups time out memory", query_tags(family="crashloop"), visible=TEAM_A)
    assert [h.runbook.id for h in hits][:2] == ["crash", "dns"]


def test_tagged_only_links_nothing_on_text_alone() -> None:
    idx = index()
    assert idx.search("coredns lookups time out", visible=TEAM_A, tagged_only=True) == []
    assert [h.runbook.id for h in idx.search("coredns lookups time out", visible=TEAM_A)] == ["dns"]


def test_camel_case_alert_names_match_their_words() -> None:
    assert {"kube", "pod", "crash", "looping", "kubepodcrashlooping"} <= set(tokens("KubePodCrashLooping"))
    hits = index().search("why is KubePodCrashLooping firing", visible=TEAM_A)
    assert hits[0].runbook.id == "crash"


def test_a_runbook_tagged_with_a_namespace_is_shown_only_to_its_readers() -> None:
    idx = index()
    query = ("billing-worker crash loops after ledger-db secret rotation", query_tags(family="crashloop",
                                                                                    workload="billing-worker"))
    assert "billing" in [h.runbook.id for h in idx.search(*query, visible=TEAM_B)]
    seen_by_a = idx.search(*query, visible=TEAM_A, k=10)
    assert "billing" not in [h.runbook.id for h in seen_by_a]
    assert all("ledger" not in h.runbook.body for h in seen_by_a)
    assert "billing" in [h.runbook.id for h in idx.search(*query, visible=Visibility("prod-1", frozenset(),
                                                                                        cluster_wide=True))]


def test_every_tagged_namespace_is_needed_and_a_cluster_tag_limits_the_cluster() -> None:
    both = parse_runbook("---\ntitle: shared\ntags: [namespace:team-a, namespace:team-b, cluster:prod-1]\n---\nx",
                         id="shared")
    assert not TEAM_A.allows(both) and not TEAM_B.allows(both)
    assert Visibility("prod-1", frozenset({"team-a", "team-b"})).allows(both)
    assert not Visibility("prod-2", frozenset({"team-a", "team-b"})).allows(both)


def test_an_empty_index_finds_nothing() -> None:
    assert RunbookIndex([]).search("anything", visible=TEAM_A) == []
    assert index().search("", visible=TEAM_A) == []


_ns = st.sampled_from(["team-a", "team-b", "team-c", "ops"])


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(st.tuples(st.lists(_ns, max_size=2), st.sampled_from(["crashloop", "dns", "oom"])),
                     min_size=1, max_size=8),
       mine=st.frozensets(_ns, max_size=3), family=st.sampled_from(["crashloop", "dns", "oom"]))
def test_search_never_returns_a_runbook_outside_the_askers_scope(docs, mine, family) -> None:
    runbooks = [parse_runbook("---\ntitle: t{}\ntags: [{}]\n---\n1. fix the {} thing\n".format(
        i, ", ".join([f"family:{fam}", *(f"namespace:{n}" for n in nss)]), fam), id=f"d{i}")
        for i, (nss, fam) in enumerate(docs)]
    hits = RunbookIndex(runbooks).search(f"{family} thing", query_tags(family=family),
                                         visible=Visibility("c", mine), k=20)
    for h in hits:
        assert set(h.runbook.tagged("namespace")) <= mine
    expected = {r.id for r in runbooks if set(r.tagged("namespace")) <= mine}
    assert {h.runbook.id for h in hits} == expected  # every visible one matches on "thing"


# -- loading: directory and Redis, failures ---------------------------------------------------------

async def test_the_directory_reloads_on_change_and_a_dead_redis_leaves_it_serving(tmp_path) -> None:
    import time as _time

    from redis.asyncio import Redis

    from sleuth.embedded import free_port
    from sleuth_agent.knowledge import Knowledge, RunbookStore

    (tmp_path / "dns.md").write_text(DNS)
    (tmp_path / "notes.txt").write_text("not a runbook file")
    dead = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=0.2)
    kb = Knowledge(str(tmp_path), RunbookStore(dead, "t"), reload_interval=3600)
    try:
        assert await kb.refresh(force=True)
        assert [r.id for r in kb.index.runbooks] == ["dns"]
        assert not await kb.refresh()  # within the interval: not even checked
        (tmp_path / "crash.md").write_text(CRASH)
        assert await kb.refresh(force=True)
        assert [r.id for r in kb.index.runbooks] == ["crash", "dns"]
        assert not await kb.refresh(force=True)  # nothing changed
        (tmp_path / "dns.md").write_text(DNS.replace("DNS lookups fail", "DNS is down"))
        stamp = _time.time() + 5
        import os

        os.utime(tmp_path / "dns.md", (stamp, stamp))
        assert await kb.refresh(force=True)
        assert {r.title for r in kb.index.runbooks} == {"Crash loops after a deploy", "DNS is down"}
    finally:
        await dead.aclose()


async def test_max_runbooks_keeps_the_directory_first(tmp_path, valkey) -> None:
    from redis.asyncio import Redis

    from sleuth_agent.knowledge import Knowledge, RunbookStore

    (tmp_path / "dns.md").write_text(DNS)
    redis = Redis.from_url(valkey.url)
    store = RunbookStore(redis, "t")
    try:
        for id, text in (("aaa", CRASH), ("bbb", PG)):
            await store.put(parse_runbook(text, id=id), text, by="carol")
        await redis.set("t:agent:kb:runbook:ccc", "{not json")
        await redis.sadd("t:agent:kb:ids", "ccc")
        kb = Knowledge(str(tmp_path), store, max_runbooks=2)
        await kb.refresh(force=True)
        assert [r.id for r in kb.index.runbooks] == ["aaa", "dns"]
        assert {r.source for r in kb.index.runbooks} == {"chat:carol", "dir:dns.md"}
        assert await store.delete("aaa") and not await store.delete("aaa")
        await kb.refresh(force=True)
        assert [r.id for r in kb.index.runbooks] == ["bbb", "dns"]
    finally:
        await redis.aclose()


async def test_a_slow_search_is_dropped_not_waited_for(monkeypatch) -> None:
    import time as _time

    from sleuth_agent.knowledge import Knowledge

    kb = Knowledge("", None, search_timeout=0.05)
    kb._loaded = kb._loaded.__class__(index(), (), 0, 0)
    monkeypatch.setattr(type(kb.index), "search", lambda *a, **k: _time.sleep(0.5) or [])
    t0 = _time.perf_counter()
    assert await kb.search("crash", query_tags(family="crashloop"), [TEAM_A]) == []
    assert _time.perf_counter() - t0 < 0.4


# -- the chat command: kb add|show|list|rm ----------------------------------------------------------

def _kb_request(op: str, user: str, namespaces: tuple[str, ...], *, editor: bool = False, cluster_wide: bool = False,
                id: str = "", text: str = ""):
    from sleuth_common.messages import ClusterScope, KbRequest, ScopeReply

    scope = ScopeReply(user=user, clusters={"prod-1": ClusterScope(namespaces=namespaces, cluster_wide=cluster_wide)})
    return KbRequest(op=op, user=user, editor=editor, scope=scope, id=id, text=text)


async def test_kb_commands_edit_for_editors_and_read_within_scope(tmp_path, valkey) -> None:
    from redis.asyncio import Redis

    from sleuth_agent.knowledge import KbResponder, Knowledge, RunbookStore

    (tmp_path / "dns.md").write_text(DNS)
    redis = Redis.from_url(valkey.url)
    store = RunbookStore(redis, "t")
    kb = Knowledge(str(tmp_path), store, max_runbooks=3)
    await kb.refresh(force=True)
    responder = KbResponder(kb, store)
    admin = {"editor": True, "cluster_wide": True}
    try:
        refused = await responder.reply(_kb_request("add", "alice", ("team-a",), id="pg", text=PG))
        assert not refused.ok and "Only cluster admins" in refused.text
        bad = await responder.reply(_kb_request("add", "carol", (), id="pg", text="# no front matter", **admin))
        assert not bad.ok and bad.text.startswith("Not added: no front matter")
        added = await responder.reply(_kb_request("add", "carol", (), id="billing", text=B_ONLY, **admin))
        assert added.ok and added.text.startswith("Added `billing`")
        dir_one = await responder.reply(_kb_request("add", "carol", (), id="dns", text=DNS, **admin))
        assert not dir_one.ok and "runbooks directory" in dir_one.text
        assert (await responder.reply(_kb_request("add", "carol", (), id="pg", text=PG, **admin))).ok
        full = await responder.reply(_kb_request("add", "carol", (), id="crash", text=CRASH, **admin))
        assert not full.ok and "already 3 runbooks" in full.text
        replaced = await responder.reply(_kb_request("add", "carol", (), id="pg", text=PG, **admin))
        assert replaced.ok and replaced.text.startswith("Replaced `pg`")

        # alice (team-a) neither lists nor reads team-b's runbook; "not known" reads the same as absent
        mine = await responder.reply(_kb_request("list", "alice", ("team-a",)))
        assert "`pg`" in mine.text and "`dns`" in mine.text and "billing" not in mine.text
        hidden = await responder.reply(_kb_request("show", "alice", ("team-a",), id="billing"))
        absent = await responder.reply(_kb_request("show", "alice", ("team-a",), id="nothing"))
        assert not hidden.ok and hidden.text == absent.text.replace("nothing", "billing")
        assert "ledger" not in hidden.text + mine.text
        shown = await responder.reply(_kb_request("show", "bob", ("team-b",), id="billing"))
        assert shown.ok and "restart ledger-sync" in shown.text and "added by carol" in shown.text

        assert not (await responder.reply(_kb_request("rm", "alice", ("team-a",), id="pg"))).ok
        assert not (await responder.reply(_kb_request("rm", "carol", (), id="dns", **admin))).ok
        assert (await responder.reply(_kb_request("rm", "carol", (), id="billing", **admin))).text == "Removed `billing`."
        gone = await responder.reply(_kb_request("rm", "carol", (), id="billing", **admin))
        assert not gone.ok and "was added through chat" in gone.text
        assert [r.id for r in kb.index.runbooks] == ["dns", "pg"]
    finally:
        await redis.aclose()


async def test_kb_add_with_redis_down_says_so_and_keeps_nothing(tmp_path) -> None:
    from redis.asyncio import Redis

    from sleuth.embedded import free_port
    from sleuth_agent.knowledge import KbResponder, Knowledge, RunbookStore

    dead = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=0.2)
    store = RunbookStore(dead, "t")
    kb = Knowledge("", store)
    try:
        reply = await KbResponder(kb, store).reply(_kb_request("add", "carol", (), id="pg", text=PG, editor=True,
                                                               cluster_wide=True))
        assert not reply.ok and "unavailable" in reply.text and len(kb.index) == 0
    finally:
        await dead.aclose()


# -- standing instructions --------------------------------------------------------------------------

NIGHTLY = """---
title: Nightly batch restarts
type: instruction
tags: [namespace:team-a]
suppress: {family: crash_loop_app_error, workload: "batch-*", between: "02:00-03:00", timezone: Europe/Berlin}
---
In team-a, restarts of batch-* between 02:00 and 03:00 are the nightly job.
"""


@pytest.mark.parametrize(("suppress", "reason"), [
    ("{workload: batch-*}", "must name the failure family"),
    ("{family: '*', workload: batch-*}", "must name the failure family"),
    ("{family: oom_killed}", "suppress.workload (a glob) or suppress.alert"),
    ("{family: oom_killed, workload: '*'}", "must name workloads"),
    ("{family: oom_killed, workload: '*-*'}", "must name workloads"),
    ("{family: oom_killed, workload: web, between: '2-3'}", 'must be "HH:MM-HH:MM"'),
    ("{family: oom_killed, workload: web, timezone: Mars/Olympus}", "unknown timezone"),
    ("{family: oom_killed, workload: a, severity: low}", "unknown suppress key(s): severity"),
    ("[family]", "must be a mapping"),
])
def test_a_suppression_must_name_what_it_hides(suppress: str, reason: str) -> None:
    text = f"---\ntitle: x\ntype: instruction\nsuppress: {suppress}\n---\nbody\n"
    with pytest.raises(RunbookError) as err:
        parse_runbook(text, id="x")
    assert reason in str(err.value)


def test_instructions_parse_round_trip_and_stay_short() -> None:
    rb = parse_runbook(NIGHTLY, id="nightly")
    assert rb.type == "instruction" and rb.suppress is not None
    assert rb.suppress.describe() == "`crash_loop_app_error` on workloads `batch-*` between 02:00 and 03:00 Europe/Berlin"
    assert parse_runbook(rb.to_text(), id="nightly") == rb
    with pytest.raises(RunbookError, match="at most 1000 characters"):
        parse_runbook("---\ntitle: x\ntype: instruction\n---\n" + "y" * 1001, id="x")
    with pytest.raises(RunbookError, match="belongs to a standing instruction"):
        parse_runbook("---\ntitle: x\nsuppress: {family: a, workload: b}\n---\nbody", id="x")
    index = RunbookIndex([rb, parse_runbook(CRASH, id="crash")])
    assert index.instructions == (rb,)
    assert [h.runbook.id for h in index.search("nightly batch restarts", visible=TEAM_A, k=5)] == []  # never linked


def _diagnosed(family: str, resource: str, alerts: tuple = ()) -> tuple:
    from sleuth_common.messages import InvestigationJob, InvestigationResult, Requester, RootCause

    job = InvestigationJob(requester=Requester(user="alice"), question="what is failing?", alerts=alerts)
    return job, InvestigationResult(status="diagnosed", root_cause=RootCause(family=family, resource=resource))


def test_a_suppression_marks_only_what_it_names_inside_its_window() -> None:
    from datetime import UTC, datetime

    from sleuth_agent.knowledge import instructions_for, suppressing
    from sleuth_common.messages import AlertRef

    rb = parse_runbook(NIGHTLY, id="nightly")
    at_night = datetime(2026, 12, 2, 1, 30, tzinfo=UTC)  # 02:30 in Berlin
    at_noon = datetime(2026, 12, 2, 11, 30, tzinfo=UTC)
    job, res = _diagnosed("crash_loop_app_error", "Deployment/team-a/batch-report")
    assert suppressing([rb], job, res, at_night) is rb
    assert suppressing([rb], job, res, at_noon) is None
    # another family (new), another workload, another namespace: not hidden
    for family, resource in (("oom_killed", "Deployment/team-a/batch-report"),
                             ("crash_loop_app_error", "Deployment/team-a/api"),
                             ("crash_loop_app_error", "Deployment/team-b/batch-report")):
        assert suppressing([rb], *_diagnosed(family, resource), at_night) is None
    # a critical alert is never marked expected
    critical = (AlertRef(labels={"alertname": "KubePodCrashLooping", "severity": "critical"}),)
    assert suppressing([rb], *_diagnosed("crash_loop_app_error", "Deployment/team-a/batch-report", critical),
                       at_night) is None
    # which instructions a run gets: visible ones, for the namespaces it is about
    assert instructions_for([rb], [TEAM_A], job, res) == [rb]
    assert instructions_for([rb], [TEAM_B], job, res) == []  # team-b may not read it
    job_b, res_b = _diagnosed("crash_loop_app_error", "Deployment/team-b/x")
    wide = Visibility("prod-1", frozenset(), cluster_wide=True)
    assert instructions_for([rb], [wide], job_b, res_b) == []  # about team-b only
