"""minired: an in-memory Redis-protocol server in Python."""

__version__ = "0.1.0"
# The Redis release whose replies, error texts and INFO fields minired matches.
REDIS_VERSION = "7.0.15"
