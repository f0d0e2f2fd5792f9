"""The reporter's settings: the shared groups plus ``reporter`` (and its ``smtp``)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from sleuth_common.config import ServiceSettings

__all__ = ["ReporterSettings", "Settings", "SmtpSettings"]


class _Group(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SmtpSettings(_Group):
    """The mail server reports are sent through. The password is never in the file: it comes
    from ``password_env`` or ``password_file``."""

    host: str = ""
    """SMTP server name; empty = no email (reports go to chat only)."""
    port: int = 587
    """SMTP port: 587 (submission, STARTTLS), 465 (``tls``), 25 (a local relay)."""
    starttls: bool = True
    """Upgrade the connection with STARTTLS, and refuse to send when the server does not offer
    it. ``false`` for a relay on the same host or network that speaks plain SMTP."""
    tls: bool = False
    """Implicit TLS from the first byte (port 465) instead of STARTTLS."""
    ca_file: str = ""
    """CA bundle that signs the server's certificate (empty = system trust)."""
    user: str = ""
    """Login name; empty = no login (a relay that trusts this host)."""
    password_env: str = "SLEUTH_SMTP_PASSWORD"
    """Environment variable holding the password of ``user``; wins over ``password_file``."""
    password_file: str = ""
    """File holding the password of ``user`` (a mounted Secret)."""
    sender: str = ""
    """The From address (``Sleuth <sleuth@example.com>``). Required for email."""
    timeout: float = 20.0
    """Seconds for connecting and for each SMTP command."""

    def password(self) -> SecretStr | None:
        value = os.environ.get(self.password_env, "") if self.password_env else ""
        if not value and self.password_file and Path(self.password_file).is_file():
            value = Path(self.password_file).read_text(encoding="utf-8").strip()
        return SecretStr(value) if value else None

    @property
    def enabled(self) -> bool:
        return bool(self.host and self.sender)


class ReporterSettings(_Group):
    host: str = "127.0.0.1"
    """Address of the /healthz, /readyz and /metrics server."""
    port: int = 9104
    """Port of that server; 0 turns it off."""
    emails: dict[str, list[str]] = Field(default_factory=dict)
    """Chat target → addresses its reports are emailed to (``{"web:team-a-alerts":
    ["team-a@example.com"]}``). A report shows what every reader of the target may read:
    list only addresses that reach those same people."""
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)
    """The mail server (email is off until ``smtp.host`` and ``smtp.sender`` are set)."""
    report_timeout: float = 120.0
    """Deadline of the agent's report job (the agent caps it at its own ``default_deadline``)."""
    answer_grace: float = 15.0
    """Seconds past the deadline to wait for the agent's answer before saying the report did not
    finish."""
    concurrency: int = 2
    """Reports one reporter process makes at the same time."""
    ack_wait: float = 30.0
    """Seconds JetStream waits for a sign of life before giving a report to another replica."""
    in_progress_interval: float = 5.0
    """Seconds between those signs while a report is being made (keep below ``ack_wait``)."""
    email_attempts: int = 5
    """Tries to send a report's email before giving up (and saying so in the chat)."""
    email_backoff: float = 30.0
    """Seconds before the second try; each further try waits twice as long."""
    email_backoff_max: float = 900.0
    """Longest wait between two tries."""
    state_ttl: float = 7 * 86400.0
    """Seconds a report's record (for ``status``) stays in Redis."""
    publish_timeout: float = 5.0
    """Seconds to wait for JetStream to store a post, a job or a queued report."""
    full_list_chars: int = 12_000
    """Characters of the chat post that lists every finding; past that it says how many more
    (the email has them all)."""

    def addresses(self, target: str) -> list[str]:
        return list(self.emails.get(target, ()))


class Settings(ServiceSettings):
    reporter: ReporterSettings = Field(default_factory=ReporterSettings)
