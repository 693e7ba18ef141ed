"""Coroutine handlers for the asyncio job libraries (arq, saq, BullMQ), each in the signature its
library calls. Attempts are counted by the libraries themselves, so no state is kept here."""
from __future__ import annotations

import arq.worker

from tests.integration.jobs import JobFailure

# arq: handler(ctx, *args); ctx["job_try"] is the 1-based attempt.


async def arq_add(ctx, a: int, b: int) -> int:
    return a + b


async def arq_fail(ctx, message: str) -> None:
    raise JobFailure(message)


async def arq_retry_once(ctx) -> str:
    if ctx["job_try"] == 1:
        raise arq.worker.Retry(defer=0.01)
    return f"succeeded on try {ctx['job_try']}"


# saq: handler(ctx, **kwargs); ctx["job"] is the saq Job, its attempts count this one.


async def saq_add(ctx, *, a: int, b: int) -> int:
    return a + b


async def saq_fail(ctx, *, message: str) -> None:
    raise JobFailure(message)


async def saq_fail_first_attempt(ctx) -> str:
    if ctx["job"].attempts == 1:
        raise JobFailure("first attempt fails")
    return f"succeeded on attempt {ctx['job'].attempts}"


# BullMQ: one processor(job, token) for the queue, dispatching on the job's name; job.attemptsMade
# counts the attempts that already failed.


async def bullmq_process(job, token) -> object:
    if job.name == "add":
        return job.data["a"] + job.data["b"]
    if job.name == "fail":
        raise JobFailure(job.data["message"])
    if job.name == "fail_first_attempt":
        if job.attemptsMade == 0:
            raise JobFailure("first attempt fails")
        return f"succeeded after {job.attemptsMade} failed attempt"
    if job.name == "label":
        return job.data["label"]
    if job.name == "report":
        await job.updateProgress(50)
        await job.log("halfway")
        return "reported"
    raise ValueError(f"no handler for job {job.name!r}")
