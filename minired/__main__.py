"""`minired` / `python -m minired`: run the server (flags and serving: cli.py)."""
from __future__ import annotations

import gc
import sys


def main(argv: list[str] | None = None) -> int:
    # Start-up creates ~30,000 objects that live as long as the process (modules, functions,
    # the command table) and no garbage worth collecting, so the cyclic collector's passes
    # while they are made only re-scan them: ~40 passes, ~6.5 ms of a ~95 ms start on the
    # reference machine. Nothing heavy is imported before this point; cli.serve turns
    # collection back on once the server listens, and the finally covers earlier exits.
    gc.disable()
    try:
        from minired.cli import run

        return run(sys.argv[1:] if argv is None else argv)
    finally:
        gc.enable()


if __name__ == "__main__":
    sys.exit(main())
