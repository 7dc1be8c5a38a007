"""An attachment's files leave the storage with its row, however the row was deleted."""
from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

log = logging.getLogger(__name__)


@receiver(post_delete, sender="pagechat.Attachment")
def attachment_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    """Whatever deleted the row (a conversation's removal, an edited question, a deleted user, the purge): its
    files leave the storage once the deletion is committed (a rolled-back deletion keeps them)."""
    files = [(f.storage, f.name) for f in (instance.file, instance.thumbnail) if f.name]

    def delete() -> None:
        for storage, name in files:
            try:
                storage.delete(name)
            except Exception:  # a missing file is already gone; nothing else may undo the deletion
                log.warning("could not delete file %s", name, exc_info=True)

    transaction.on_commit(delete)
