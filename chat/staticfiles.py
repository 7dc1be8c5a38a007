"""Deprecated alias of `chat.infra.staticfiles` (the path 0.1.0 documented); removed in 0.3."""
import warnings

from chat.infra.staticfiles import ModuleManifestStaticFilesStorage

warnings.warn("chat.staticfiles is chat.infra.staticfiles now: name chat.infra.staticfiles.ModuleManifestStaticFilesStorage in STORAGES",
              DeprecationWarning, stacklevel=2)

__all__ = ["ModuleManifestStaticFilesStorage"]
