"""Image pull failures: the cause sits at the end of containerd's wrapped message; a refused pull
(401/403) is explained by the pod's pull credentials and those of its neighbours."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sleuth_agent.rca._collect import Collected
from sleuth_agent.rca._observe import WorkloadObservation, clip, pull_cause
from sleuth_agent.rca._records import EventView, PodView
from sleuth_agent.rca._report import fill
from sleuth_agent.rca._signatures import match_all
from sleuth_agent.rca.engine.match import _variables

_spec = importlib.util.spec_from_file_location("agent_rca_fakes", Path(__file__).parent / "rca_fakes.py")
assert _spec and _spec.loader
rca_fakes = importlib.util.module_from_spec(_spec)
sys.modules["agent_rca_fakes"] = rca_fakes
_spec.loader.exec_module(rca_fakes)

LONG_403 = (
    'Failed to pull image "images.example.net/shop/cart:7.1": failed to pull and unpack image '
    '"images.example.net/shop/cart:7.1": failed to resolve reference "images.example.net/shop/cart:7.1": '
    "failed to authorize: failed to fetch oauth token: unexpected status from POST request to "
    "https://images.example.net/v2/token?scope=repository%3Ashop%2Fcart%3Apull: 403 Forbidden"
)


def test_the_cause_is_found_at_the_end_of_a_wrapped_message() -> None:
    assert pull_cause(LONG_403) == ("auth", "403 Forbidden from images.example.net")
    kind, phrase = pull_cause('Failed to pull image "r.example/a:9": rpc error: code = NotFound desc = manifest unknown')
    assert kind == "not_found" and "manifest unknown" in phrase
    assert pull_cause("dial tcp: lookup r.example on 10.0.0.10:53: no such host")[0] == "dns"
    assert pull_cause('Back-off pulling image "x"') == ("", "")


def test_clip_keeps_the_end_of_long_messages() -> None:
    out = clip(LONG_403, 120)
    assert out.startswith("Failed to pull image") and out.endswith("403 Forbidden") and len(out) <= 121


def _pod(name: str, owner: str, image: str, ready: bool, secrets: list[str] | None = None, waiting: str = "") -> PodView:
    raw = {
        "namespace": "shop", "name": name, "phase": "Running" if ready else "Pending",
        "owner": {"kind": "ReplicaSet", "name": f"{owner}-5d8f7c9b6"},
        "containers": [{"name": owner, "image": image, "ready": ready,
                        "state": {"waiting": {"reason": waiting}} if waiting else {"running": {}}}],
    }
    if secrets is not None:
        raw["image_pull_secrets"] = secrets
    return PodView.parse(raw)


async def test_refused_pull_without_credentials_points_at_the_secret_a_sibling_uses() -> None:
    failing = _pod("cart-5d8f7c9b6-aaaaa", "cart", "images.example.net/shop/cart:7.1", False, [], "ImagePullBackOff")
    sibling = _pod("checkout-5d8f7c9b6-bbbbb", "checkout", "images.example.net/shop/checkout:3", True)
    got = Collected(pods={"shop": [failing, sibling]})
    tools = rca_fakes.FakeTools(
        {("get_pod", "checkout-5d8f7c9b6-bbbbb"): {"namespace": "shop", "name": sibling.name, "image_pull_secrets": ["shop-registry"],
                                                   "restart_policy": "Always", "containers": []}}
    )
    fu, _ = rca_fakes.follow(tools, got)
    obs = WorkloadObservation("shop", "Deployment", "cart", pods=[failing], events=[EventView.parse(
        {"type": "Warning", "reason": "Failed", "message": LONG_403, "involved_object": {"kind": "Pod", "name": failing.name}})])
    await fu.run(obs)
    m = match_all(obs.facts())[0]
    assert m.signature.family == "image_pull"
    v = _variables(obs, m)
    summary = fill(m.signature.summary, v)
    assert "403 Forbidden" in summary and "no imagePullSecrets" in summary and "shop-registry" in summary
    action = m.signature.actions[0]
    assert "shop-registry" in fill(action["text"], v)
    assert "imagePullSecrets" in fill(action["command"], v) and "deployment/cart" in fill(action["command"], v)


async def test_missing_image_says_fix_the_tag() -> None:
    failing = _pod("cart-5d8f7c9b6-aaaaa", "cart", "images.example.net/shop/cart:7.l", False, [], "ErrImagePull")
    fu, _ = rca_fakes.follow(rca_fakes.FakeTools({}), Collected(pods={"shop": [failing]}))
    msg = 'Failed to pull image "images.example.net/shop/cart:7.l": rpc error: code = NotFound desc = failed to resolve reference "images.example.net/shop/cart:7.l": images.example.net/shop/cart:7.l: not found'
    obs = WorkloadObservation("shop", "Deployment", "cart", pods=[failing], events=[EventView.parse(
        {"type": "Warning", "reason": "Failed", "message": msg, "involved_object": {"kind": "Pod", "name": failing.name}})])
    await fu.run(obs)
    m = match_all(obs.facts())[0]
    v = _variables(obs, m)
    assert "not found" in fill(m.signature.summary, v)
    assert "does not exist" in fill(m.signature.actions[0]["text"], v)
    assert fill(m.signature.actions[0]["command"], v).startswith("kubectl set image deployment/cart")
