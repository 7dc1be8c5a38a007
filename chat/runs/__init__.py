"""Runs: a turn's events as a gapless, resumable log, owned by one process and followed from any.

- `handle.py`  RunHandle: one live run's events in its owner's memory, copied in order to the run log;
- `log.py`     the run-log backends by dotted path (CHAT_RUN_LOG_BACKEND): memory, Redis Streams;
- `store.py`   the run rows: ownership, heartbeats, the stale-run sweep, endings rebuilt from the database;
- `manager.py` RunManager: owning, following, cancel/approve signalling, graceful shutdown;
- `heartbeat.py` its heartbeat: runs marked alive, the sweep, lost logs rewritten, missed cancels and approvals polled.
"""
from chat.runs.handle import RunHandle
from chat.runs.heartbeat import PROCESS_ID
from chat.runs.log import ResyncRequired
from chat.runs.manager import RunManager, manager

__all__ = ["PROCESS_ID", "ResyncRequired", "RunHandle", "RunManager", "manager"]
