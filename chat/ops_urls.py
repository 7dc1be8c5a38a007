"""Deprecated alias of `chat.ops.urls` (the path 0.1.0 documented); removed in 0.3."""
import warnings

from chat.ops.urls import urlpatterns

warnings.warn("chat.ops_urls is chat.ops.urls now: include('chat.ops.urls')", DeprecationWarning, stacklevel=2)

__all__ = ["urlpatterns"]
