"""Reading a server process's log from outside, as an operator's log pipeline would: one JSON object a line
(LOG_FORMAT=json, chat.infra.logs.JsonFormatter), plus daphne's own access lines, which it prints without logging."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# daphne's access log: `127.0.0.1:53210 - - [28/Nov/2026:23:00:02] "POST /api/chat" 200 4907`, and for websockets
# `... "WSCONNECT /ws/chat/" - -`
ACCESS_LINE = re.compile(r'^\S+:\d+ - - \[[^\]]+\] "[A-Z]+ [^"]*" (\d{3}|-) (\d+|-)$')
QUIET_LEVELS = {"DEBUG", "INFO"}


@dataclass
class LogReport:
    """A log's records by level, and every line a quiet healthy server should not have written."""

    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def messages(self, level: str = "INFO") -> list[str]:
        return [str(r.get("message")) for r in self.records if r.get("level") == level]


def read_json_log(text: str) -> LogReport:
    """Each line: a JSON record at DEBUG/INFO without a traceback, or a daphne access line; anything else is a problem
    (a record above INFO, a traceback in a record or printed raw, a line that is not JSON)."""
    report = LogReport()
    for line in text.splitlines():
        if not line.strip() or ACCESS_LINE.match(line):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            report.problems.append(f"not a JSON record: {line[:300]}")
            continue
        if not isinstance(record, dict):
            report.problems.append(f"not a JSON object: {line[:300]}")
            continue
        report.records.append(record)
        if record.get("level") not in QUIET_LEVELS:
            report.problems.append(f"{record.get('level')} {record.get('logger')}: {str(record.get('message'))[:300]}")
        if "exc_info" in record or "stack_info" in record or "Traceback" in line:
            report.problems.append(f"traceback from {record.get('logger')}: {str(record.get('message'))[:300]}")
    return report
