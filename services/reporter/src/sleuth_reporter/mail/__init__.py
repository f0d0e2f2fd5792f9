"""The report by email: rendering (plain text, HTML, the severity chart) and sending over SMTP."""

from sleuth_reporter.mail.chart import severity_chart
from sleuth_reporter.mail.render import report_email
from sleuth_reporter.mail.send import Mailer, MailError

__all__ = ["MailError", "Mailer", "report_email", "severity_chart"]
