"""Render helm/sleuth offline with the real Helm engine (helm-python-sdk), for tests.

``render_chart(values)`` returns the rendered Kubernetes objects as dicts, in template order,
without NOTES.txt. The subcharts (NATS, Valkey) are not vendored, so their objects are never in
the output (the SDK renders a declared-but-absent dependency as nothing); the Sleuth services'
config still points at their Services (``<release>-nats``, ``<release>-redis``).

Every Deployment's pod is what ``docker run IMAGE <args>`` would run: ``args`` is the service
command (``sleuth-gateway --config /etc/sleuth/sleuth.yaml``), env values are literal or
``secretKeyRef``, the config file comes from the ``<fullname>-config`` ConfigMap (key
``sleuth.yaml``) and other files from volumes, so a test can start the same commands locally.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml
from helm_python import Chart

__all__ = [
    "CHART_DIR",
    "NAMESPACE",
    "RELEASE",
    "containers",
    "find",
    "load_chart",
    "render_chart",
    "render_notes",
    "service_config",
]

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "helm" / "sleuth"
RELEASE = "sleuth"
NAMESPACE = "sleuth"

Obj = dict[str, Any]


@functools.cache
def load_chart() -> Chart:
    """The chart, loaded once per process (charts are immutable and thread-safe)."""
    return Chart.load(CHART_DIR)


def _render(values: dict[str, Any] | None, release: str, namespace: str) -> dict[str, str]:
    return load_chart().render(values=values or {}, name=release, namespace=namespace, is_install=True)


def render_chart(values: dict[str, Any] | None = None, *, release: str = RELEASE,
                 namespace: str = NAMESPACE) -> list[Obj]:
    """The objects ``helm install`` would create with ``values`` (schema-checked; a failing
    template or schema raises helm_python's HelmValuesError / HelmRenderError)."""
    objects: list[Obj] = []
    for path, text in _render(values, release, namespace).items():
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def render_notes(values: dict[str, Any] | None = None, *, release: str = RELEASE,
                 namespace: str = NAMESPACE) -> str:
    """NOTES.txt as ``helm install`` prints it."""
    out = _render(values, release, namespace)
    return next((text for path, text in out.items() if path.endswith("NOTES.txt")), "")


def find(objects: list[Obj], kind: str, name: str | None = None) -> list[Obj]:
    """The objects of ``kind`` (and ``name``)."""
    return [o for o in objects if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)]


def containers(obj: Obj) -> list[Obj]:
    """Containers of a workload's pod template."""
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def service_config(objects: list[Obj]) -> dict[str, Any]:
    """The services' config file (``sleuth.yaml`` of the ``<fullname>-config`` ConfigMap)."""
    (cm,) = [o for o in find(objects, "ConfigMap") if "sleuth.yaml" in o.get("data", {})]
    cfg: dict[str, Any] = yaml.safe_load(cm["data"]["sleuth.yaml"])
    return cfg


def main(argv: list[str] | None = None) -> int:
    """``make chart VALUES=my-values.yaml``: what ``helm template`` prints, without a helm binary."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="make chart", description="Render helm/sleuth offline (Helm's own engine).")
    p.add_argument("-f", "--values", action="append", default=[], help="values file (repeatable; later wins)")
    p.add_argument("--release", default=RELEASE)
    p.add_argument("--namespace", default=NAMESPACE)
    args = p.parse_args(argv)
    values: dict[str, Any] = {}
    for path in args.values:
        values = _merge(values, yaml.safe_load(Path(path).read_text()) or {})
    try:
        out = _render(values, args.release, args.namespace)
    except Exception as exc:  # the engine's schema and template errors, as helm prints them
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    for path, text in out.items():
        if text.strip() and not path.endswith("NOTES.txt"):
            print(f"---\n# Source: {path}\n{text.strip()}")
    return 0


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


if __name__ == "__main__":
    raise SystemExit(main())
