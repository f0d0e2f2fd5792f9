"""Redaction shapes that must not over-fire on ordinary log text."""

from __future__ import annotations

from sleuth_common.redact import redact_text


def test_identified_by_is_a_credential_only_in_a_statement_about_an_account() -> None:
    assert redact_text("CREATE USER 'app'@'%' IDENTIFIED BY 'S3cr3t!pw'")[0] == "CREATE USER 'app'@'%' IDENTIFIED BY '[REDACTED]'"
    assert redact_text("ALTER USER app IDENTIFIED BY 'n3wPass'")[1] == 1
    assert redact_text("GRANT ALL ON db.* TO app IDENTIFIED BY 'hunter22'")[1] == 1
    # alembic names the revision it cannot find: that is the decisive detail, not a password
    line = "FAILED: Can't locate revision identified by 'e3b1c9a4d2f7'"
    assert redact_text(line) == (line, 0)
