"""``volume_mount_failed``: the kubelet cannot set up a volume. When the volume is a ConfigMap or
Secret that lacks the key the pod's ``items`` ask for (or does not exist), the chain ends at that
object; an attach, a device or a node-side failure stays with the workload that declares the volume."""

from __future__ import annotations

import re

from sleuth_agent.rca.engine.graph import Graph, Ref
from sleuth_agent.rca.engine.registry import FamilyRule, Located, Symptom, family, phrase

__all__ = ["Rule"]

_VOLUME = re.compile(r'for volume "([^"]+)"')
_KEY = re.compile(r"(?:configmap|secret) references non-existent (?:config|secret) key:?\s*(\S+)", re.IGNORECASE)
_MISSING = re.compile(r'(configmap|secret)s? "([^"]+)" not found', re.IGNORECASE)
_KINDS = {"config_map": "ConfigMap", "secret": "Secret"}


@family("volume_mount_failed")
class Rule(FamilyRule):
    def locate(self, symptom: Symptom, graph: Graph) -> Located:
        message = symptom.variables.get("mount_error", "") or symptom.variables.get("event_message", "")
        vol = _VOLUME.search(message)
        sources = {
            name: (_KINDS[kind], source)
            for p in symptom.obs.pods
            for name, kind, source in p.volumes
            if kind in _KINDS and source
        }
        subject = symptom.subject
        if vol and vol.group(1) in sources:
            kind, name = sources[vol.group(1)]
            root = Ref.of(kind, subject.namespace, name)
            key = _KEY.search(message)
            if key:
                return Located(root, subject, f"{phrase(subject)} cannot mount volume {vol.group(1)} → {kind} {name} has no key {key.group(1)}")
            if _MISSING.search(message):
                return Located(root, subject, f"{phrase(subject)} cannot mount volume {vol.group(1)} → {kind} {name} does not exist")
        return super().locate(symptom, graph)
