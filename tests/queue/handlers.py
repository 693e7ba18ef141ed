"""Handlers the CLI tests run by dotted path in worker subprocesses."""
from __future__ import annotations

import asyncio
import time


def sleep_then_echo(job):
    print(f"started {job.id}", flush=True)
    time.sleep(job.data.get("sleep", 0))
    return job.data


async def async_sleep_then_echo(job):
    print(f"started {job.id}", flush=True)
    await asyncio.sleep(job.data.get("sleep", 0))
    return job.data


async def async_echo(job):
    print(f"started {job.id}", flush=True)
    return job.data


not_callable = 42
