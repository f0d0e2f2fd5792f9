"""Sleuth gateway: HTTP API, built-in web chat, rate limits and conversation memory."""

from sleuth_gateway.app import create_app
from sleuth_gateway.bus import ensure_streams
from sleuth_gateway.commands import parse_command
from sleuth_gateway.settings import GatewaySettings, Settings

__all__ = ["GatewaySettings", "Settings", "create_app", "ensure_streams", "parse_command"]
