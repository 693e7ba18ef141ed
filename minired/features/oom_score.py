"""oom-score-adj: Redis's setOOMScoreAdj, which writes the process's preference for the kernel's
OOM killer to /proc/self/oom_score_adj by process class (master, replica, background child).

The state is the process's, as Redis's statics are: the value found before the first write is
the base that `relative` adds to and that turning the option off restores; a forked child
inherits it."""
from __future__ import annotations

import logging

log = logging.getLogger("minired")

OOM_SCORE_FILE = "/proc/self/oom_score_adj"
MASTER, REPLICA, BACKGROUND_CHILD = range(3)
_state = {"adjusted": False, "base": 0, "class": MASTER}


def apply_oom_score(config, process_class: int | None = None) -> bool:
    """Write the score `config` asks of `process_class` (by default the server's own: master
    or replica, as last set), or restore the base when the option was turned off; False when
    the file cannot be read or written, as Redis logs it."""
    if process_class is None:
        process_class = _state["class"]
    mode = config.get("oom-score-adj")
    if mode != "no":
        if not _state["adjusted"]:
            try:
                with open(OOM_SCORE_FILE) as f:
                    _state["base"] = int(f.read().strip() or 0)
            except (OSError, ValueError) as exc:
                log.warning("Unable to read oom_score_adj: %s", getattr(exc, "strerror", exc))
                return False
            _state["adjusted"] = True
        value = int(config.get("oom-score-adj-values").split()[process_class])
        if mode != "absolute":  # yes and relative: relative to the base
            value += _state["base"]
        value = max(-1000, min(1000, value))
    elif _state["adjusted"]:
        _state["adjusted"] = False
        value = _state["base"]
    else:
        return True
    try:
        with open(OOM_SCORE_FILE, "w") as f:
            f.write(f"{value}\n")
    except OSError as exc:
        log.warning("Unable to write oom_score_adj: %s", exc.strerror)
        return False
    return True


def set_role(config, replica: bool) -> None:
    """The server became a replica or a master (REPLICAOF): its score follows its class."""
    _state["class"] = REPLICA if replica else MASTER
    apply_oom_score(config)
