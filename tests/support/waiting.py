"""Waiting for what another connection, thread or server does: poll until it is so, with a
deadline long enough for a loaded machine (tests must wait for the event, never for a time)."""
from __future__ import annotations

import time
from typing import Any, Callable

from .respclient import RawClient, Verbatim

# Generous: a wait returns as soon as its condition holds, so the deadline only bounds how long
# a real failure takes to report.
DEADLINE_S = 30.0


def wait_until(condition: Callable[[], Any], what: str, timeout: float = DEADLINE_S,
               interval: float = 0.005) -> Any:
    """Poll `condition` until it is true (and return it); fail saying `what` never happened."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(interval)


def info_field(client: RawClient, section: str, field: str) -> str:
    """One field of INFO `section` (RESP2 or RESP3)."""
    info = client.call("INFO", section)
    text = info.text if isinstance(info, Verbatim) else info
    for line in text.decode().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    raise AssertionError(f"no {field} in INFO {section}: {text!r}")


def blocked_clients(client: RawClient) -> int:
    return int(info_field(client, "clients", "blocked_clients"))


def wait_blocked(*clients: RawClient, count: int = 1) -> None:
    """Until each server (one connection to it each) has exactly `count` blocked clients: a
    blocking command sent on another connection has arrived and blocked."""
    for client in clients:
        wait_until(lambda: blocked_clients(client) == count,
                   f"{count} blocked client(s) on port {client.sock.getpeername()[1]}")


def blocked_in_client_list(client: RawClient) -> int:
    """The blocked clients CLIENT LIST shows (flag b): an admin command, so unlike INFO it is
    not shown to MONITOR."""
    listing = client.call("CLIENT", "LIST")
    text = listing.text if isinstance(listing, Verbatim) else listing
    flags = (field for line in text.decode().splitlines() for field in line.split()
             if field.startswith("flags="))
    return sum("b" in flag[len("flags="):] for flag in flags)


def wait_link_up(replica_port: int) -> None:
    """Until the replica at `replica_port` reports its link to its master up."""
    client = RawClient(replica_port)
    try:
        wait_until(lambda: info_field(client, "replication", "master_link_status") == "up",
                   f"the link of the replica on port {replica_port} up")
    finally:
        client.close()


def wait_caught_up(master_port: int, replica_port: int) -> None:
    """Until the replica has applied the whole stream its master sent so far."""
    master, replica = RawClient(master_port), RawClient(replica_port)
    try:
        offset = int(info_field(master, "replication", "master_repl_offset"))
        wait_until(lambda: int(info_field(replica, "replication", "slave_repl_offset")) >= offset,
                   f"the replica on port {replica_port} at offset {offset}")
    finally:
        master.close()
        replica.close()
