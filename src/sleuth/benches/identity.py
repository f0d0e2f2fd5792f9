"""``make bench`` — what reading as the asker costs (DESIGN §2, "the cluster decides").

- ``impersonated_investigation``: wall time of the demo investigation (alice's question) with
  kube-mcp requiring a signed identity and impersonating her, against the floor of the same
  investigation with kube-mcp reading with its own rights (the old mode; only the filter scoped
  it). Runs alternate so both see the same machine load. Target: ratio <= 1.10.
- ``identity_sign_verify``: one assertion signed and verified (Ed25519), against the floor of a
  JSON round trip of the same claims.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path

from sleuth.benches import emit
from sleuth.scenarios import investigate_offline, offline_cluster

REPO = Path(__file__).resolve().parents[3]
QUESTION = "what is failing in team-a?"


async def _median_ms(oc: object, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await investigate_offline(oc, "alice", QUESTION)  # type: ignore[arg-type]
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _investigations(rounds: int = 8, per_round: int = 2) -> tuple[float, float]:
    snapshot = REPO / "scenarios" / "demo"
    with offline_cluster(snapshot) as imp, offline_cluster(snapshot, impersonate=False) as own:
        asyncio.run(_median_ms(imp, 1))  # warm both (discovery, connections, caches)
        asyncio.run(_median_ms(own, 1))
        a: list[float] = []
        b: list[float] = []
        for _ in range(rounds):
            a += asyncio.run(_median_ms(imp, per_round))
            b += asyncio.run(_median_ms(own, per_round))
    return statistics.median(a), statistics.median(b)


def _sign_verify(n: int = 2000) -> tuple[float, float]:
    from sleuth_common.identity import IdentitySigner, IdentityVerifier, generate_keypair, load_public_key

    signer = IdentitySigner.from_pem(generate_keypair()[0])
    verifier = IdentityVerifier([load_public_key(signer.public_pem())], audience="kube-mcp/bench")
    groups = ["team-a-devs", "oncall", "system:authenticated"]
    t0 = time.perf_counter()
    for _ in range(n):
        verifier.verify(signer.mint("alice", groups, audience="kube-mcp/bench", job="j"))
    signed = (time.perf_counter() - t0) / n * 1e6
    claims = {"sub": "alice", "grp": groups, "aud": "kube-mcp/bench", "job": "j", "exp": 1, "iat": 0}
    t0 = time.perf_counter()
    for _ in range(n):
        json.loads(json.dumps(claims))
    floor = (time.perf_counter() - t0) / n * 1e6
    return signed, floor


def run() -> None:
    imp, own = _investigations()
    emit("impersonated_investigation", imp, "ms", "same investigation, kube-mcp reading with its own rights",
         own, "ratio <= 1.10", question=QUESTION, user="alice")
    signed, floor = _sign_verify()
    emit("identity_sign_verify", signed, "us", "json round trip of the same claims", floor, "(report)")
