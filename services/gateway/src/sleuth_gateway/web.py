"""The built-in web chat: a page, its script and its style sheet, all served by the gateway
(no CDN, no inline script or style: the Content-Security-Policy allows only these files)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

__all__ = ["CSP", "index", "page", "static"]

CSP = (
    "default-src 'none'; "
    "script-src 'self'; "
    "style-src 'self'; "
    "connect-src 'self'; "
    "img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}


@lru_cache(maxsize=4)
def _read(name: str) -> str:
    return resources.files("sleuth_gateway").joinpath(f"web/{name}").read_text(encoding="utf-8")


def page() -> tuple[str, str]:
    """The page and its Content-Security-Policy."""
    return _read("index.html"), CSP


async def index(request: Request) -> Response:
    return HTMLResponse(page()[0], headers={"Content-Security-Policy": CSP})


async def static(request: Request) -> Response:
    """``/static/app.js`` and ``/static/app.css`` (the only files there)."""
    name = request.path_params["name"]
    media_type = _STATIC.get(name)
    if media_type is None:
        raise HTTPException(404)
    return Response(_read(name), media_type=media_type, headers={"Content-Security-Policy": CSP})
