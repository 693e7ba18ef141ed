"""The dashboard's web side: a Starlette ASGI app serving one page, its static files, a JSON
API over ``data.py`` and a server-sent event stream that refreshes the page without reloads.

Starlette (and uvicorn to serve it) because they are small, maintained and ASGI: the app can be
mounted in anyone's service next to their own routes. Access: with a token, every request must
carry it (``?token=`` once, which sets a same-site cookie, or ``Authorization: Bearer``); the
write actions also need the page's own CSRF token in a header and a same-origin ``Origin``, so a
page on another site cannot make a browser retry or remove jobs.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import secrets
from importlib import resources
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..keys import DEFAULT_PREFIX
from . import data

TOKEN_COOKIE = "minired_dashboard_token"
CSRF_HEADER = "x-csrf-token"
STREAM_INTERVAL_S = 1.0


def _static_dir() -> str:
    return str(resources.files("minired_queue.dashboard") / "static")


class Dashboard:
    """One dashboard over one redis-py client (sync; calls run in Starlette's thread pool)."""

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX, token: str | None = None,
                 stream_interval_s: float = STREAM_INTERVAL_S) -> None:
        self.client = client
        self.prefix = prefix
        self.token = token
        self.csrf = secrets.token_urlsafe(24)
        self.stream_interval_s = stream_interval_s

    # --- access -------------------------------------------------------------------------------
    def _authorized(self, request: Request) -> bool:
        if not self.token:
            return True
        offered = request.cookies.get(TOKEN_COOKIE) or ""
        bearer = request.headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            offered = bearer[7:]
        return hmac.compare_digest(offered.encode(), self.token.encode())

    def _same_origin(self, request: Request) -> bool:
        origin = request.headers.get("origin")
        if origin is None:  # not a browser's cross-site request (browsers send Origin on POST)
            return True
        return origin.split("://", 1)[-1] == request.headers.get("host", "")

    def guard(self, handler: Callable, *, write: bool = False) -> Callable:
        async def guarded(request: Request) -> Response:
            if not self._authorized(request):
                return PlainTextResponse("a token is required (open the URL the dashboard printed)",
                                         status_code=401)
            if write and not (hmac.compare_digest(request.headers.get(CSRF_HEADER, ""), self.csrf)
                              and self._same_origin(request)):
                return PlainTextResponse("cross-site request refused", status_code=403)
            try:
                return await handler(request)
            except ValueError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except Exception as exc:  # a Redis error: show it, as the page shows any error
                return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=502)
        return guarded

    async def _call(self, fn: Callable, *args: Any) -> Any:
        return await run_in_threadpool(fn, self.client, *args)

    # --- pages ----------------------------------------------------------------------------------
    async def index(self, request: Request) -> Response:
        offered = request.query_params.get("token")
        if self.token and offered is not None:
            if not hmac.compare_digest(offered.encode(), self.token.encode()):
                return PlainTextResponse("wrong token", status_code=401)
            response = RedirectResponse("./", status_code=303)
            response.set_cookie(TOKEN_COOKIE, offered, httponly=True, samesite="strict")
            return response
        if not self._authorized(request):
            return PlainTextResponse("a token is required (open the URL the dashboard printed)",
                                     status_code=401)
        page = (resources.files("minired_queue.dashboard") / "static" / "index.html").read_text()
        return HTMLResponse(page.replace("{{csrf}}", self.csrf),
                            headers={"Cache-Control": "no-store"})

    # --- reads ----------------------------------------------------------------------------------
    async def overview(self, request: Request) -> Response:
        return JSONResponse(await self._call(data.overview, self.prefix))

    async def queue(self, request: Request) -> Response:
        name = request.path_params["name"]
        return JSONResponse(await self._call(data.queue_detail, self.prefix, name))

    async def job(self, request: Request) -> Response:
        p = request.path_params
        found = await self._call(data.job_detail, self.prefix, p["name"], p["job_id"])
        if found is None:
            return JSONResponse({"error": f"no job {p['job_id']!r} in {p['name']!r}"}, status_code=404)
        return JSONResponse(found)

    async def history(self, request: Request) -> Response:
        name = request.path_params["name"]
        return JSONResponse(await self._call(data.history, self.prefix, name))

    async def server(self, request: Request) -> Response:
        return JSONResponse(await self._call(data.server_panel))

    async def stream(self, request: Request) -> Response:
        """Server-sent events: the overview and the server panel every interval."""
        async def events():
            while not await request.is_disconnected():
                try:
                    payload = {"overview": await self._call(data.overview, self.prefix),
                               "server": await self._call(data.server_panel)}
                except Exception as exc:
                    payload = {"error": f"{type(exc).__name__}: {exc}"}
                yield f"data: {json.dumps(payload)}\n\n"
                await asyncio.sleep(self.stream_interval_s)
        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    # --- writes ---------------------------------------------------------------------------------
    async def _body(self, request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            raise ValueError("the body must be JSON") from None
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        return body

    async def retry(self, request: Request) -> Response:
        body = await self._body(request)
        ids = body.get("ids")
        if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
            raise ValueError("ids must be a list of job ids, or null for every failed job")
        moved = await self._call(data.retry, self.prefix, request.path_params["name"], ids)
        return JSONResponse({"retried": moved})

    async def remove(self, request: Request) -> Response:
        p = request.path_params
        removed = await self._call(data.remove, self.prefix, p["name"], p["job_id"])
        return JSONResponse({"removed": removed})

    async def pause(self, request: Request) -> Response:
        body = await self._body(request)
        paused = body.get("paused")
        if not isinstance(paused, bool):
            raise ValueError("paused must be true or false")
        await self._call(data.set_paused, self.prefix, request.path_params["name"], paused)
        return JSONResponse({"paused": paused})

    async def advance(self, request: Request) -> Response:
        ms = (await self._body(request)).get("ms")
        if not isinstance(ms, int) or isinstance(ms, bool):
            raise ValueError("ms must be an integer")
        return JSONResponse({"clock_ms": await self._call(data.advance_clock, ms)})

    # --- the app ----------------------------------------------------------------------------------
    def app(self) -> Starlette:
        g = self.guard
        routes = [
            Route("/", self.index),
            Route("/api/overview", g(self.overview)),
            Route("/api/server", g(self.server)),
            Route("/api/stream", g(self.stream)),
            Route("/api/queues/{name}", g(self.queue)),
            Route("/api/queues/{name}/history", g(self.history)),
            Route("/api/queues/{name}/jobs/{job_id:path}", g(self.job)),
            Route("/api/queues/{name}/retry", g(self.retry, write=True), methods=["POST"]),
            Route("/api/queues/{name}/pause", g(self.pause, write=True), methods=["POST"]),
            Route("/api/queues/{name}/remove/{job_id:path}", g(self.remove, write=True),
                  methods=["POST"]),
            Route("/api/server/advance", g(self.advance, write=True), methods=["POST"]),
            Mount("/static", StaticFiles(directory=_static_dir()), name="static"),
        ]
        return Starlette(routes=routes)


def create_app(client: Any, *, prefix: str = DEFAULT_PREFIX, token: str | None = None,
               stream_interval_s: float = STREAM_INTERVAL_S) -> Starlette:
    """An ASGI app to mount in one's own service, e.g. ``app.mount("/queues", create_app(r))``."""
    return Dashboard(client, prefix=prefix, token=token, stream_interval_s=stream_interval_s).app()
