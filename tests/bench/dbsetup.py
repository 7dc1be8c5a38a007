"""Bench database setup, run in its own process with the server's settings (DATABASE_URL):
`python -m tests.bench.dbsetup users <n>` prints {"tokens": [...]} for users bench0..bench<n-1>;
`python -m tests.bench.dbsetup prefill <user index> <messages>` prints {"conversation_id": id}."""
from __future__ import annotations

import json
import os
import sys
import uuid


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def users(n: int) -> dict[str, list[str]]:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    User = get_user_model()
    tokens = []
    for i in range(n):
        user, created = User.objects.get_or_create(username=f"bench{i}")
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        tokens.append(Token.objects.get_or_create(user=user)[0].key)
    return {"tokens": tokens}


def prefill(user_index: int, count: int) -> dict[str, int]:
    """One conversation holding `count` alternating user/assistant messages shaped like real turns."""
    from django.contrib.auth import get_user_model

    from chat.models import Conversation, Message
    from chat.prompt.history import plain_answer_messages
    from chat.turns.persistence import provider_messages_stored
    from tests.bench.words import answer_text

    user = get_user_model().objects.get(username=f"bench{user_index}")
    conv = Conversation.objects.create(owner=user, title="bench history", page="")
    answer = answer_text(100)
    rows = []
    for i in range(count):
        if i % 2 == 0:
            rows.append(Message(conversation=conv, role=Message.Role.USER, content=f"question {i}: bench:tokens=100",
                                client_message_id=str(uuid.uuid4()), context={}))
        else:
            # stored as the product stores a plain answer (chat.turns.persistence.provider_messages_stored)
            rows.append(Message(conversation=conv, role=Message.Role.ASSISTANT, content=answer, provider_messages=provider_messages_stored(
                plain_answer_messages(answer), answer)))
    Message.objects.bulk_create(rows, batch_size=500)
    return {"conversation_id": conv.pk, "messages": Message.objects.filter(conversation=conv).count()}


def main(argv: list[str]) -> None:
    _setup()
    commands = {"users": lambda a: users(int(a[0])), "prefill": lambda a: prefill(int(a[0]), int(a[1]))}
    print(json.dumps(commands[argv[0]](argv[1:])))


if __name__ == "__main__":
    main(sys.argv[1:])
