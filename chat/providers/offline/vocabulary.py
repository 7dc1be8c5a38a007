"""The words of a site's pages the built-in intents go by, registered by the app that owns the pages (the demo's in
pages/demo/vocabulary.py): which facts of a page's context name the entity on screen, which words are too general to
name a field of a proposal, and the subject to fall back on when neither the user nor the page gives one."""
from __future__ import annotations

from collections.abc import Iterable


class Vocabulary:
    """Additive word lists (an app adds to them in its `assistant` module; nothing is ever replaced)."""

    def __init__(self) -> None:
        # the keys of the facts that name what is on screen (`Order: 1234`), lower case; the first such fact wins
        self.entity_keys: set[str] = {"entity", "name", "title"}
        # words that name the pages' kind of thing rather than one field ("change the report frequency" names the
        # frequency, not a `report_*` field)
        self.general_words: set[str] = set()
        self.fallback_topic = "general"  # the subject of a proposal's names and items when nothing gives one

    def add(self, *, entity_keys: Iterable[str] = (), general_words: Iterable[str] = (), fallback_topic: str | None = None) -> None:
        """Add fact keys naming the entity and words too general to name a field; set the fallback subject if given."""
        self.entity_keys |= {k.lower() for k in entity_keys}
        self.general_words |= {w.lower() for w in general_words}
        if fallback_topic is not None:
            self.fallback_topic = fallback_topic


vocabulary = Vocabulary()
