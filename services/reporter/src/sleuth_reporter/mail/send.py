"""Sending over SMTP (aiosmtplib): STARTTLS or implicit TLS as configured, a login when a user is
set (the password from the environment or a file, never the config). Failures come back as
:class:`MailError`, saying whether trying again could help."""

from __future__ import annotations

from email.message import EmailMessage

import aiosmtplib

from sleuth_reporter.settings import SmtpSettings

__all__ = ["MailError", "Mailer"]


class MailError(Exception):
    """The message was not accepted. ``permanent``: the server refused it for good (a 5xx
    answer), so retrying would only repeat the refusal."""

    def __init__(self, reason: str, *, permanent: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


class Mailer:
    def __init__(self, cfg: SmtpSettings) -> None:
        self.cfg = cfg

    @property
    def enabled(self) -> bool:
        return self.cfg.enabled

    async def send(self, msg: EmailMessage) -> None:
        cfg = self.cfg
        password = cfg.password()
        try:
            await aiosmtplib.send(
                msg,
                hostname=cfg.host,
                port=cfg.port,
                use_tls=cfg.tls,
                start_tls=False if cfg.tls else cfg.starttls,
                username=cfg.user or None,
                password=password.get_secret_value() if (cfg.user and password) else None,
                timeout=cfg.timeout,
                cert_bundle=cfg.ca_file or None,
            )
        except aiosmtplib.SMTPRecipientsRefused as exc:
            raise MailError(f"every recipient was refused ({len(exc.recipients)})", permanent=True) from exc
        except aiosmtplib.SMTPResponseException as exc:
            raise MailError(f"SMTP {exc.code}: {exc.message[:200]}", permanent=500 <= exc.code < 600) from exc
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            raise MailError(_reason(exc)) from exc


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):  # aiosmtplib's timeouts too
        return "the mail server did not answer in time"
    if isinstance(exc, OSError):  # aiosmtplib's connection errors too
        return "the mail server could not be reached"
    return str(exc)[:200] or type(exc).__name__
