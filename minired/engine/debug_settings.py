"""What the DEBUG command's switches set (commands/diagnostics.py), read where they matter.

Redis keeps these as fields of its `server` struct; minired keeps them together, one object per
server (`Server.debug`), so the many that only tests flip do not each take a server slot.
"""
from __future__ import annotations

# quicklist.c: packed_threshold's default (1 GB) and its ceiling (not even slightly below 4 GB).
QUICKLIST_PACKED_THRESHOLD = 1 << 30
QUICKLIST_PACKED_THRESHOLD_MAX = (1 << 32) - (1 << 20)
REPLY_BUFFER_PEAK_RESET_MS = 5000  # REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME


class DebugSettings:
    __slots__ = ("skip_checksum_validation", "disable_deny_scripts", "quicklist_packed_threshold",
                 "aof_flush_sleep_us", "pause_cron", "reply_buffer_peak_reset_ms",
                 "reply_buffer_resizing", "cluster_drop_packet_filter")

    def __init__(self) -> None:
        # RESTORE payloads (and RDB files) are read without checking their CRC64.
        self.skip_checksum_validation = False
        # Scripts may call commands flagged noscript (DEBUG, CLIENT LIST in Redis's tests ...).
        self.disable_deny_scripts = False
        # List elements from this size on are plain quicklist nodes (DEBUG OBJECT's ql_nodes).
        self.quicklist_packed_threshold = QUICKLIST_PACKED_THRESHOLD
        self.aof_flush_sleep_us = 0
        self.pause_cron = False
        self.reply_buffer_peak_reset_ms = REPLY_BUFFER_PEAK_RESET_MS  # -1: never
        self.reply_buffer_resizing = True
        self.cluster_drop_packet_filter = -1
