"""List paging (`limit`/`continue`) as kube-apiserver answers it, over HTTPS."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest

Client = Callable[..., httpx.Client]
PODS = "/api/v1/pods"


def _names(doc: dict) -> list[str]:
    return [f"{i['metadata'].get('namespace', '')}/{i['metadata']['name']}" for i in doc["items"]]


def _all_pages(c: httpx.Client, path: str, limit: int, **params: str) -> tuple[list[str], list[dict]]:
    names: list[str] = []
    metas: list[dict] = []
    query: dict[str, str | int] = {"limit": limit, **params}
    for _ in range(100):  # a token that never advances fails here instead of looping
        r = c.get(path, params=query)
        assert r.status_code == 200, r.text
        doc = r.json()
        names += _names(doc)
        metas.append(doc["metadata"])
        if not doc["metadata"].get("continue"):
            return names, metas
        query = {"limit": limit, "continue": doc["metadata"]["continue"], **params}
    raise AssertionError("the continue token never ran out")


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_pages_add_up_to_the_whole_list_in_order(client: Client, limit: int) -> None:
    c = client("root")
    whole = _names(c.get(PODS).json())
    assert len(whole) > 3
    names, metas = _all_pages(c, PODS, limit)
    assert names == whole
    assert all(len(m.get("continue", "")) > 0 for m in metas[:-1]) and "continue" not in metas[-1]
    # remainingItemCount counts what the later pages hold
    done = 0
    for m in metas[:-1]:
        done += limit
        assert m["remainingItemCount"] == len(whole) - done
    assert "remainingItemCount" not in metas[-1]


def test_a_page_of_one_namespace_and_of_a_cluster_scoped_resource(client: Client) -> None:
    c = client("root")
    whole = _names(c.get("/api/v1/namespaces/shop/pods").json())
    assert _all_pages(c, "/api/v1/namespaces/shop/pods", 2)[0] == whole
    namespaces = _names(c.get("/api/v1/namespaces").json())
    assert _all_pages(c, "/api/v1/namespaces", 1)[0] == namespaces


def test_selector_pages_hold_matches_only_and_no_remaining_count(client: Client) -> None:
    c = client("root")
    wanted = _names(c.get(PODS, params={"fieldSelector": "status.phase=Running"}).json())
    assert 1 < len(wanted) < len(_names(c.get(PODS).json()))
    names, metas = _all_pages(c, PODS, 1, fieldSelector="status.phase=Running")
    assert names == wanted
    assert all("remainingItemCount" not in m for m in metas)


def test_table_pages_carry_the_token(client: Client) -> None:
    c = client("root")
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    first = c.get(PODS, params={"limit": 1}, headers={"Accept": accept}).json()
    assert first["kind"] == "Table" and len(first["rows"]) == 1 and first["metadata"]["continue"]
    second = c.get(PODS, params={"limit": 1, "continue": first["metadata"]["continue"]},
                   headers={"Accept": accept}).json()
    assert second["rows"][0]["object"]["metadata"]["name"] != first["rows"][0]["object"]["metadata"]["name"]


def test_paging_does_not_widen_rbac(client: Client) -> None:
    r = client("alice").get(PODS, params={"limit": 1})
    assert r.status_code == 403


def _token(doc: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode()


@dataclass(frozen=True)
class Bad:
    token: str
    code: int
    reason: str


@pytest.mark.parametrize("case", [
    Bad("not base64 at all!", 400, "BadRequest"),
    Bad(_token(["a list"]), 400, "BadRequest"),
    Bad(_token({"v": "meta.k8s.io/v0", "rv": 1, "start": "shop/x\x00"}), 400, "BadRequest"),
    Bad(_token({"v": "meta.k8s.io/v1", "rv": 1, "start": "no-terminator"}), 400, "BadRequest"),
    Bad(_token({"v": "meta.k8s.io/v1", "rv": 0, "start": "shop/x\x00"}), 410, "Expired"),
], ids=["garbage", "not-an-object", "version", "start", "expired"])
def test_bad_or_expired_token_is_a_clear_status(client: Client, case: Bad) -> None:
    r = client("root").get(PODS, params={"limit": 1, "continue": case.token})
    assert r.status_code == case.code
    status = r.json()
    assert status["kind"] == "Status" and status["reason"] == case.reason and status["code"] == case.code
    if case.code == 410:
        assert "too old to display a consistent list result" in status["message"]
    else:
        assert status["message"].startswith("continue key is not valid")


def test_limit_must_be_a_number(client: Client) -> None:
    r = client("root").get(PODS, params={"limit": "lots"})
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"
