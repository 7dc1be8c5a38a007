"""Deprecated alias of `chat.infra.logs`'s LOGGING classes (the paths 0.1.0 documented); removed in 0.3."""
import warnings

from chat.infra.logs import JsonFormatter, RunContextFilter

warnings.warn("chat.logs is chat.infra.logs now: name chat.infra.logs.RunContextFilter / JsonFormatter in LOGGING",
              DeprecationWarning, stacklevel=2)

__all__ = ["JsonFormatter", "RunContextFilter"]
