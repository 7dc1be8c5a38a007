"""The chat app's admin: conversations and messages, runs and their diagnostics, the quality dashboard, eval sets.

Django's admin autodiscovery imports this package; each module registers its own pages.
"""
from chat.admin import conversations, evals, quality, runs  # noqa: F401  (each registers its admin pages)
