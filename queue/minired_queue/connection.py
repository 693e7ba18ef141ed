"""Make redis-py clients for a URL: plain (Redis, minired) or Redis Cluster."""
from __future__ import annotations

from typing import Any

import redis
import redis.asyncio
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster


def connect(url: str, cluster: bool = False, **options: Any) -> redis.Redis | RedisCluster:
    """A synchronous client. Blocking waits need no socket timeout, so none is set."""
    if cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


def connect_async(url: str, cluster: bool = False, **options: Any) -> redis.asyncio.Redis | AsyncRedisCluster:
    if cluster:
        return AsyncRedisCluster.from_url(url, **options)
    return redis.asyncio.Redis.from_url(url, **options)


def is_asyncio_client(client: Any) -> bool:
    return isinstance(client, (redis.asyncio.Redis, AsyncRedisCluster))


def is_cluster(client: Any) -> bool:
    return isinstance(client, (RedisCluster, AsyncRedisCluster))
