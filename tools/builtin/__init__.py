"""Built-in tools available on every page."""
from tools.builtin import (
    core,  # noqa: F401
    web,  # noqa: F401
)
