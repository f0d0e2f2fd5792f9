"""Chat commands: one parser and one runner for every chat surface (DESIGN §5).

``parse_command(text)`` says whether a whole message is a command; ``run_command(gw, identity,
command, surface=…)`` answers it in Markdown. ``caller_access`` is the caller's scope per
cluster, shared by ``access`` and ``GET /v1/whoami``.
"""

from sleuth_gateway.commands._access import Access, ClusterAccess, caller_access
from sleuth_gateway.commands._parse import Command, parse_command
from sleuth_gateway.commands._run import help_text, run_command

__all__ = ["Access", "ClusterAccess", "Command", "caller_access", "help_text", "parse_command", "run_command"]
