"""The built-in web chat: one self-contained page (inline CSS and JS, no CDN)."""

from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

__all__ = ["index", "page"]


@lru_cache(maxsize=1)
def page() -> tuple[str, str]:
    """The page and its Content-Security-Policy (inline script allowed by hash, nothing else)."""
    html = resources.files("sleuth_gateway").joinpath("web/index.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.DOTALL)
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts
    )
    csp = (
        "default-src 'none'; "
        f"script-src {hashes}; "
        "style-src 'unsafe-inline'; "
        "connect-src 'self'; "
        "img-src 'self' data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return html, csp


async def index(request: Request) -> Response:
    html, csp = page()
    return HTMLResponse(
        html,
        headers={
            "Content-Security-Policy": csp,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-store",
        },
    )
