"""Alertmanager webhook payloads and the alert-channel requests (``sleuth.alerts.*``, DESIGN §1).

``AlertmanagerWebhook`` is Alertmanager's own webhook body (version 4) exactly as its
``webhook_configs`` sends it; the alerts service validates posts with it and puts the raw bytes on
the ``ALERTS`` stream. ``AlertChannelRequest``/``AlertChannelReply`` carry the chat commands
``alerts on|off|status`` from the gateway to the alerts service (request/reply on
``sleuth.alerts.channels.<op>``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sleuth_common.messages.base import Message
from sleuth_common.messages.jobs import Requester

__all__ = [
    "AlertChannelOp",
    "AlertChannelReply",
    "AlertChannelRequest",
    "AlertmanagerAlert",
    "AlertmanagerWebhook",
]

AlertChannelOp = Literal["on", "off", "status"]


class _Payload(BaseModel):
    # Alertmanager adds fields over time; unknown ones are ignored, known ones are typed.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class AlertmanagerAlert(_Payload):
    """One alert of a webhook notification."""

    status: Literal["firing", "resolved"]
    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: str = Field(default="", alias="startsAt")
    ends_at: str = Field(default="", alias="endsAt")
    generator_url: str = Field(default="", alias="generatorURL")
    fingerprint: str = ""

    @field_validator("labels")
    @classmethod
    def _has_alertname(cls, labels: dict[str, str]) -> dict[str, str]:
        if not labels.get("alertname"):
            raise ValueError("every alert needs an alertname label")
        return labels


class AlertmanagerWebhook(_Payload):
    """The webhook body of Alertmanager's ``webhook_configs`` (payload version 4)."""

    version: Literal["4"]
    group_key: str = Field(default="", alias="groupKey")
    truncated_alerts: int = Field(default=0, alias="truncatedAlerts")
    status: Literal["firing", "resolved"]
    receiver: str = ""
    group_labels: dict[str, str] = Field(default_factory=dict, alias="groupLabels")
    common_labels: dict[str, str] = Field(default_factory=dict, alias="commonLabels")
    common_annotations: dict[str, str] = Field(default_factory=dict, alias="commonAnnotations")
    external_url: str = Field(default="", alias="externalURL")
    alerts: tuple[AlertmanagerAlert, ...]


class AlertChannelRequest(Message):
    """``alerts on|off|status`` said by ``user`` in chat ``channel`` (a chat target such as
    ``web:team-a-alerts``). The gateway has authenticated the user and checked membership."""

    kind: Literal["alerts.channel.request"] = "alerts.channel.request"
    schema_version: int = 1
    op: AlertChannelOp
    channel: str
    user: str
    groups: tuple[str, ...] = ()
    members: tuple[Requester, ...] = ()
    """Everyone who reads ``channel`` now, as the gateway resolved them (Kubernetes user and
    groups per chat member), for a channel whose members only the gateway knows (any target but
    ``web:``, e.g. ``mattermost:<channel_id>``); ignored for ``web:`` channels, whose members are
    in the config (``gateway.channels[].members``).

    Send **every** reader, the one saying the command included: an empty tuple means "unknown",
    never "nobody else". The alerts service always adds the investigating identity itself, so a
    list without the marker is tolerated; duplicates (same user and set of groups) are dropped.
    Send them with every ``on`` and ``status``: ``on`` stores them with the mark (an ``on``
    without them is refused: answers could not be fitted to the channel), ``status`` replaces
    the stored ones (someone joined or left). Answers are investigated with the intersection of
    every listed identity's scope, and their ``ChatPost.meta["readers"]`` names these identities."""


class AlertChannelReply(Message):
    """What the bot says in the channel, and the channel's state after the command."""

    kind: Literal["alerts.channel.reply"] = "alerts.channel.reply"
    schema_version: int = 1
    ok: bool = True
    text: str
    marked_by: str = ""
    """User whose access alerts in this channel are investigated with ("" = the route's identity)."""
    run_as: str = ""
    """The identity investigations in this channel run as now ("" = none: alerts are listed only)."""
    routes: tuple[str, ...] = ()
    """Alert routes that post to this channel."""
