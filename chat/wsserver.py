"""Deprecated alias of `chat.api.wsserver` (the path 0.1.0 documented for uvicorn's --ws); removed in 0.3."""
import warnings
from typing import Any

from chat.api import wsserver

warnings.warn("chat.wsserver is chat.api.wsserver now: uvicorn --ws chat.api.wsserver:UvicornWebSocketProtocol",
              DeprecationWarning, stacklevel=2)


def __getattr__(name: str) -> Any:
    """`chat.wsserver:UvicornWebSocketProtocol` and the rest, from the new module."""
    return getattr(wsserver, name)
