"""The dashboard's web side: a Starlette ASGI app serving one page, its static files, a JSON
API over ``data.py`` and a server-sent event stream that refreshes the page without reloads.

Starlette (and uvicorn to serve it) because they are small, maintained and ASGI: the app can be
mounted in anyone's service next to their own routes.

Access: every request must name an allowed host in its ``Host`` header (loopback names and
addresses unless told more), or it is answered 421 before any handler runs: a page whose
name was re-pointed at 127.0.0.1 (DNS rebinding) is thus not served. With a token, every
request must also carry it (``?token=`` once, which sets a same-site cookie, or
``Authorization: Bearer``). The write actions also need the page's own CSRF token in a header
and an ``Origin`` that is the page's own host, so a page on another site cannot make a browser
retry or remove jobs.

Cost: every read goes through one shared snapshot per (view, interval): however many tabs are
open, the dashboard reads each view from Redis at most once per interval, and never writes.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import time
from importlib import resources
from typing import Any, Awaitable, Callable, Hashable, Iterable

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
from starlette.types import ASGIApp, Receive, Scope, Send

from ..keys import DEFAULT_PREFIX
from . import data

TOKEN_COOKIE = "minired_dashboard_token"
CSRF_HEADER = "x-csrf-token"
STREAM_INTERVAL_S = 1.0
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
ANY_HOST = "*"  # in allowed_hosts: do not check Host (a token guards the dashboard instead)


def _static_dir() -> str:
    return str(resources.files("minired_queue.dashboard") / "static")


# --- which host a request names --------------------------------------------------------------
def split_host(value: str) -> tuple[str, str | None]:
    """``name[:port]`` or ``[v6 address][:port]`` as (lower-case name, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else None
    name, colon, port = value.rpartition(":")
    if not colon or ":" in name:  # no port, or a bare v6 address
        return value, None
    return name, port


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """Whether a ``Host`` value names an allowed host: an entry without a port allows any
    port (the name is what a rebinding page cannot fake), one with a port only that one."""
    name, port = split_host(host)
    if not name:
        return False
    for entry in allowed:
        if entry == ANY_HOST:
            return True
        allowed_name, allowed_port = split_host(entry)
        if name == allowed_name and (allowed_port is None or allowed_port == port):
            return True
    return False


class HostGuard:
    """ASGI middleware: a request whose ``Host`` is not in the allow-list gets 421 before any
    route runs (no page, no CSRF token, no data, no write)."""

    def __init__(self, app: ASGIApp, allowed: tuple[str, ...]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":  # (the dashboard serves no websockets)
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not host_allowed(host, self.allowed):
                response = PlainTextResponse(
                    f"misdirected request: this dashboard does not answer to host {host!r} "
                    f"(allowed: {', '.join(self.allowed)}; add names with --allowed-host)",
                    status_code=421)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _refusal(reason: str, message: str, status: int) -> JSONResponse:
    """Access refusals as JSON the page can show: ``reason`` tells it what to suggest."""
    return JSONResponse({"error": message, "reason": reason}, status_code=status)


# --- one read per view per interval, for every tab ---------------------------------------------------
class Snapshots:
    """The latest result of each read (keyed by view and arguments), reused for ``interval_s``
    by every request and every event stream, and shared while in flight: N open tabs cost
    Redis what one does. Writes ``clear`` it, so the page shows their effect at once."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self._taken: dict[Hashable, tuple[float, asyncio.Future]] = {}

    async def get(self, key: Hashable, fetch: Callable[[], Awaitable[Any]]) -> Any:
        now = self.clock()
        found = self._taken.get(key)
        if found is None or (found[1].done() and now - found[0] >= self.interval_s):
            # Forget what is too old to reuse, so job pages looked at once do not pile up.
            self._taken = {k: v for k, v in self._taken.items()
                           if not v[1].done() or now - v[0] < self.interval_s}
            found = (now, asyncio.ensure_future(fetch()))
            self._taken[key] = found
        return await asyncio.shield(found[1])

    def clear(self) -> None:
        self._taken.clear()


def _param(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise ValueError(f"the query parameter {name!r} is required")
    return value


def _id_list(ids: Any) -> bool:
    return isinstance(ids, list) and all(isinstance(i, str) for i in ids)


class Dashboard:
    """One dashboard over one redis-py client (sync; calls run in Starlette's thread pool)."""

    def __init__(self, client: Any, *, prefix: str = DEFAULT_PREFIX, token: str | None = None,
                 stream_interval_s: float = STREAM_INTERVAL_S,
                 allowed_hosts: Iterable[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if token is not None and not token:
            raise ValueError("the dashboard token is empty: give a real one, or none at all")
        self.client = client
        self.prefix = prefix
        self.token = token
        self.csrf = secrets.token_urlsafe(24)
        self.stream_interval_s = stream_interval_s
        self.allowed_hosts = (*LOOPBACK_HOSTS, *(allowed_hosts or ()))
        self.snapshots = Snapshots(stream_interval_s, clock)

    # --- access -------------------------------------------------------------------------------
    def _authorized(self, request: Request) -> bool:
        if not self.token:
            return True
        offered = request.cookies.get(TOKEN_COOKIE) or ""
        bearer = request.headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            offered = bearer[7:]
        return hmac.compare_digest(offered.encode(), self.token.encode())

    def _origin_allowed(self, request: Request) -> bool:
        """A browser sends Origin on every POST: it must be this very host, and an allowed
        one. No Origin: not a browser's cross-site request (the CSRF token still applies)."""
        origin = request.headers.get("origin")
        if origin is None:
            return True
        scheme, sep, host = origin.partition("://")
        return (bool(sep) and scheme in ("http", "https") and host == request.headers.get("host", "")
                and host_allowed(host, self.allowed_hosts))

    def guard(self, handler: Callable, *, write: bool = False) -> Callable:
        async def guarded(request: Request) -> Response:
            if not self._authorized(request):
                return _refusal("token", "a token is required (open the URL the dashboard printed)", 401)
            if write:
                if not self._origin_allowed(request):
                    return _refusal("origin", "cross-site request refused", 403)
                if not hmac.compare_digest(request.headers.get(CSRF_HEADER, ""), self.csrf):
                    # Most often a tab opened before the dashboard restarted (a new CSRF token).
                    return _refusal("csrf", "this page is out of date (the dashboard restarted?): "
                                    "reload it and try again", 403)
            try:
                return await handler(request)
            except ValueError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except Exception as exc:  # a Redis error: show it, as the page shows any error
                return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=502)
            finally:
                if write:
                    self.snapshots.clear()
        return guarded

    async def _call(self, fn: Callable, *args: Any) -> Any:
        return await run_in_threadpool(fn, self.client, *args)

    async def _read(self, fn: Callable, *args: Any) -> Any:
        """A read through the shared snapshots: at most one per view per interval."""
        return await self.snapshots.get((fn.__name__, *args), lambda: self._call(fn, *args))

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
        return JSONResponse(await self._read(data.overview, self.prefix))

    async def queue(self, request: Request) -> Response:
        return JSONResponse(await self._read(data.queue_detail, self.prefix, _param(request, "name")))

    async def job(self, request: Request) -> Response:
        name, job_id = _param(request, "queue"), _param(request, "id")
        found = await self._read(data.job_detail, self.prefix, name, job_id)
        if found is None:
            return JSONResponse({"error": f"no job {job_id!r} in {name!r}"}, status_code=404)
        return JSONResponse(found)

    async def jobs(self, request: Request) -> Response:
        """A page of one state's jobs: ?queue=&state=&page=&size=&name=&order=newest|oldest."""
        params = request.query_params
        try:
            page, size = int(params.get("page", "1")), int(params.get("size", "25"))
        except ValueError:
            raise ValueError("page and size must be integers") from None
        order = params.get("order", "newest")
        if order not in ("newest", "oldest"):
            raise ValueError("order must be newest or oldest")
        return JSONResponse(await self._read(data.job_list, self.prefix, _param(request, "queue"),
                                             _param(request, "state"), page, size,
                                             params.get("name", ""), order == "newest"))

    async def history(self, request: Request) -> Response:
        return JSONResponse(await self._read(data.history, self.prefix, _param(request, "name")))

    async def server(self, request: Request) -> Response:
        return JSONResponse(await self._read(data.server_panel))

    async def stream(self, request: Request) -> Response:
        """Server-sent events: the overview and the server panel every interval, from the
        snapshots every other tab reads too."""
        async def events():
            while not await request.is_disconnected():
                try:
                    payload = {"overview": await self._read(data.overview, self.prefix),
                               "server": await self._read(data.server_panel)}
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
        """Failed jobs (``ids``, or null: all of them), or completed ones (``state``:
        ``completed``, with ``ids``) back to wait."""
        body = await self._body(request)
        ids = body.get("ids")
        if ids is not None and not _id_list(ids):
            raise ValueError("ids must be a list of job ids, or null for every failed job")
        name = _param(request, "queue")
        if body.get("state", "failed") == "completed":
            if ids is None:
                raise ValueError("name the completed jobs to retry")
            return JSONResponse({"retried": await self._call(data.retry_completed, self.prefix, name, ids)})
        if body.get("state", "failed") != "failed":
            raise ValueError("retry takes failed or completed jobs")
        return JSONResponse({"retried": await self._call(data.retry, self.prefix, name, ids)})

    async def remove(self, request: Request) -> Response:
        """One job (``?id=``) or the body's ``ids``: jobs not active are deleted."""
        name, job_id = _param(request, "queue"), request.query_params.get("id")
        if job_id:
            return JSONResponse({"removed": await self._call(data.remove, self.prefix, name, job_id)})
        ids = (await self._body(request)).get("ids")
        if not _id_list(ids):
            raise ValueError("give ?id= or a list of ids")
        return JSONResponse({"removed": await self._call(data.remove_many, self.prefix, name, ids)})

    async def promote(self, request: Request) -> Response:
        moved = await self._call(data.promote, self.prefix, _param(request, "queue"), _param(request, "id"))
        return JSONResponse({"promoted": moved})

    async def clean(self, request: Request) -> Response:
        body = await self._body(request)
        state, age_ms = body.get("state"), body.get("age_ms")
        if not isinstance(age_ms, int) or isinstance(age_ms, bool):
            raise ValueError("age_ms must be an integer")
        return JSONResponse({"removed": await self._call(data.clean, self.prefix, _param(request, "queue"),
                                                         state, age_ms)})

    async def drain(self, request: Request) -> Response:
        delayed = (await self._body(request)).get("delayed", True)
        if not isinstance(delayed, bool):
            raise ValueError("delayed must be true or false")
        return JSONResponse({"removed": await self._call(data.drain, self.prefix, _param(request, "queue"),
                                                         delayed)})

    async def obliterate(self, request: Request) -> Response:
        """Deletes the whole queue: the body must name it again (``confirm``)."""
        name = _param(request, "queue")
        if (await self._body(request)).get("confirm") != name:
            raise ValueError("type the queue's name to confirm")
        return JSONResponse({"removed": await self._call(data.obliterate, self.prefix, name)})

    async def pause(self, request: Request) -> Response:
        body = await self._body(request)
        paused = body.get("paused")
        if not isinstance(paused, bool):
            raise ValueError("paused must be true or false")
        await self._call(data.set_paused, self.prefix, _param(request, "queue"), paused)
        return JSONResponse({"paused": paused})

    async def advance(self, request: Request) -> Response:
        ms = (await self._body(request)).get("ms")
        if not isinstance(ms, int) or isinstance(ms, bool):
            raise ValueError("ms must be an integer")
        return JSONResponse({"clock_ms": await self._call(data.advance_clock, ms)})

    # --- the app ----------------------------------------------------------------------------------
    def app(self) -> ASGIApp:
        g = self.guard
        routes = [
            Route("/", self.index),
            Route("/api/overview", g(self.overview)),
            Route("/api/server", g(self.server)),
            Route("/api/stream", g(self.stream)),
            # Queue names and job ids travel as query parameters: any name works, even one
            # with a "/" or one that is ".." (which a browser would resolve away in a path).
            Route("/api/queue", g(self.queue)),
            Route("/api/history", g(self.history)),
            Route("/api/job", g(self.job)),
            Route("/api/jobs", g(self.jobs)),
            Route("/api/retry", g(self.retry, write=True), methods=["POST"]),
            Route("/api/pause", g(self.pause, write=True), methods=["POST"]),
            Route("/api/remove", g(self.remove, write=True), methods=["POST"]),
            Route("/api/promote", g(self.promote, write=True), methods=["POST"]),
            Route("/api/clean", g(self.clean, write=True), methods=["POST"]),
            Route("/api/drain", g(self.drain, write=True), methods=["POST"]),
            Route("/api/obliterate", g(self.obliterate, write=True), methods=["POST"]),
            Route("/api/server/advance", g(self.advance, write=True), methods=["POST"]),
            Mount("/static", StaticFiles(directory=_static_dir()), name="static"),
        ]
        return HostGuard(Starlette(routes=routes), self.allowed_hosts)


def create_app(client: Any, *, prefix: str = DEFAULT_PREFIX, token: str | None = None,
               stream_interval_s: float = STREAM_INTERVAL_S,
               allowed_hosts: Iterable[str] | None = None) -> ASGIApp:
    """An ASGI app to mount in one's own service, e.g. ``app.mount("/queues", create_app(r))``.
    It answers to loopback host names only, plus ``allowed_hosts`` (``["*"]``: any)."""
    return Dashboard(client, prefix=prefix, token=token, stream_interval_s=stream_interval_s,
                     allowed_hosts=allowed_hosts).app()
