"""Protocol logic written once, run on a synchronous or an asyncio client.

A *step generator* yields operations and receives their replies; it does no I/O itself.
``drive`` runs one on a redis-py client, ``drive_async`` on a redis.asyncio client. Every
operation has ``run(client)`` and ``async run_async(client)``: the scripted transitions
(``transitions.Call``), plain commands (``Command``), pipelines (``Pipeline``), user
callbacks (``Hook``, errors logged) and user code (``Invoke``, errors handed back); the
asyncio side awaits what user code returns when it is awaitable. So the worker, the
asyncio worker, the effect guard, the sweeper and the scheduler share every decision and
differ only in how they wait.
"""
from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
Steps = Generator[Any, Any, T]


@dataclass(frozen=True)
class Command:
    """One client method call, e.g. ``Command("zrange", key, 0, 9)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __init__(self, method: str, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "kwargs", kwargs)

    def run(self, client: Any) -> Any:
        return getattr(client, self.method)(*self.args, **self.kwargs)

    async def run_async(self, client: Any) -> Any:
        return await getattr(client, self.method)(*self.args, **self.kwargs)


@dataclass(frozen=True)
class Pipeline:
    """Several commands in one round trip (not a transaction); the reply is their list."""

    commands: tuple[Command, ...]

    def _fill(self, client: Any) -> Any:
        pipe = client.pipeline(transaction=False)
        for command in self.commands:
            getattr(pipe, command.method)(*command.args, **command.kwargs)
        return pipe

    def run(self, client: Any) -> list:
        return self._fill(client).execute() if self.commands else []

    async def run_async(self, client: Any) -> list:
        return await self._fill(client).execute() if self.commands else []


@dataclass(frozen=True)
class Hook:
    """A user callback; one that raises is logged and ignored (it must not change the
    job's recorded outcome)."""

    fn: Callable[..., Any] | None
    args: tuple[Any, ...]

    def run(self, client: Any) -> None:
        if self.fn is None:
            return
        try:
            result = self.fn(*self.args)
            if inspect.isawaitable(result):  # an async hook on the threaded worker
                log.error("hook %r is a coroutine function; the threaded worker cannot await it", self.fn)
                getattr(result, "close", lambda: None)()
        except Exception:
            log.exception("hook %r raised", self.fn)

    async def run_async(self, client: Any) -> None:
        if self.fn is None:
            return
        try:
            result = self.fn(*self.args)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("hook %r raised", self.fn)


@dataclass(frozen=True)
class Outcome:
    result: Any = None
    error: BaseException | None = None


@dataclass(frozen=True)
class Invoke:
    """Call user code (awaited on the asyncio side when it returns an awaitable); the reply
    is an ``Outcome``, so the step generator decides what an exception means."""

    fn: Callable[[], Any]

    def run(self, client: Any) -> Outcome:
        try:
            return Outcome(self.fn())
        except BaseException as exc:
            return Outcome(error=exc)

    async def run_async(self, client: Any) -> Outcome:
        try:
            result = self.fn()
            if inspect.isawaitable(result):
                result = await result
            return Outcome(result)
        except BaseException as exc:
            return Outcome(error=exc)


def drive(steps: Steps[T], client: Any) -> T:
    """Run a step generator on a synchronous client; returns what it returns."""
    reply = None
    while True:
        try:
            operation = steps.send(reply)
        except StopIteration as done:
            return done.value
        reply = operation.run(client)


async def drive_async(steps: Steps[T], client: Any) -> T:
    """Run a step generator on an asyncio client."""
    reply = None
    while True:
        try:
            operation = steps.send(reply)
        except StopIteration as done:
            return done.value
        reply = await operation.run_async(client)
