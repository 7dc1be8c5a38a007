"""The bench answer's words, shared by the bench model and the peer products' apps (no Django, no deps)."""
from __future__ import annotations

WORDS = ("the", "stream", "of", "tokens", "arrives", "at", "a", "steady", "pace", "and", "every", "one",
         "is", "relayed", "to", "the", "client", "in", "order")


def token_text(i: int) -> str:
    """Token i of the bench answer: a short word with its leading space, like a real tokenizer's piece."""
    return ("" if i == 0 else " ") + WORDS[i % len(WORDS)]


def answer_text(n: int) -> str:
    """The whole n-token answer."""
    return "".join(token_text(i) for i in range(n))
