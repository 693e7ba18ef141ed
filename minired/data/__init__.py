"""The data layer: the keyspace (databases, expiry, watched and ready keys) and the value types
(streams, sorted sets, HyperLogLog, geohash, glob matching), with no knowledge of clients."""
