"""Features that plug into the engine through its hook points (engine/hooks.py): ACL and
connection limits, pub/sub, keyspace notifications, client-side caching, CLIENT PAUSE, MONITOR,
persistence (RDB, AOF), fault injection, cluster mode and metrics."""
