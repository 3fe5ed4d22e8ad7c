"""Opening one SQLite file that several processes share (the ledger and traffic stores).

``PRAGMA journal_mode=WAL`` on a file another process is opening at the same instant fails at
once with "database is locked": SQLite does not call the busy handler for the journal-mode switch,
so ``busy_timeout`` does not cover it (seen in CI: two router processes started together on a
fresh ledger file, one failed its first reservation). The switch and the schema are retried here,
with short sleeps, until the same busy timeout has passed; then the last error is raised.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from routeproof.clock import s_of_ms

__all__ = ["open_shared"]

_RETRY_SLEEP_S = 0.005


def open_shared(path: Path, *, busy_timeout_ms: int, schema: str, synchronous_full: bool = False) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with ``schema`` applied (a script in one transaction).

    Called from a worker thread (it sleeps). A lock another process holds past ``busy_timeout_ms``
    raises the ``sqlite3.OperationalError``; any other error is raised at once."""
    give_up_at = time.monotonic() + s_of_ms(busy_timeout_ms)
    while True:
        conn = sqlite3.connect(path, timeout=s_of_ms(busy_timeout_ms), isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            if synchronous_full:
                conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(schema)
        except sqlite3.OperationalError as exc:
            conn.close()
            if "locked" not in str(exc) or time.monotonic() >= give_up_at:
                raise
            time.sleep(_RETRY_SLEEP_S)
            continue
        except BaseException:
            conn.close()
            raise
        return conn
