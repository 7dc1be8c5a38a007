"""An attachment as clients see it (`attachment_data`, `attachment_summary`) and as the model reads it: a placeholder
block in built history, resolved per provider into `image` / `document` blocks or a note (`blocks_resolve`)."""
from __future__ import annotations

import base64
import copy
import logging
from typing import Any

from django.urls import reverse

from chat.agent.data import as_data_inline
from chat.models import Attachment
from chat.userdata.attachments import PDF

log = logging.getLogger(__name__)
BLOCK = "attachment"  # the placeholder block type in built history, resolved per provider by `blocks_resolve`


# ---- what clients see ----------------------------------------------------------------------------


def attachment_data(att: Attachment) -> dict[str, Any]:
    """{id, name, content_type, size, width, height, url, thumbnail_url}: an attachment as the API shows it."""
    url = reverse("pagechat:attachment-file", args=[str(att.pk)])
    return {
        "id": str(att.pk), "name": att.name, "content_type": att.content_type, "size": att.size,
        "width": att.width, "height": att.height, "url": url,
        "thumbnail_url": reverse("pagechat:attachment-thumbnail", args=[str(att.pk)]) if att.thumbnail else None,
    }


def attachment_summary(att: Attachment) -> dict[str, Any]:
    """What diagnostics and the export keep of an attachment: never its bytes."""
    return {"id": str(att.pk), "name": att.name, "content_type": att.content_type, "size": att.size, "sha256": att.sha256}


# ---- what the model gets -------------------------------------------------------------------------


def placeholder_block(att: Attachment) -> dict[str, Any]:
    """The attachment in built history, before the provider's blocks are known (see `blocks_resolve`)."""
    return {"type": BLOCK, "id": str(att.pk), "name": att.name, "content_type": att.content_type, "size": att.size}


def _note(block: dict[str, Any], why: str) -> dict[str, Any]:
    # the name is whatever the file was called where it came from: fenced as data (docs/hardening.md)
    return {"type": "text", "text": f"[Attachment {as_data_inline('file_name', block['name'])} ({block['content_type']}): {why}]"}


def blocks_resolve(messages: list[dict[str, Any]], *, images: bool, documents: bool) -> list[dict[str, Any]]:
    """Built history with its attachment placeholders replaced: `image` / `document` blocks (base64) where the
    provider takes them, else a note saying the file was attached but this model cannot read it. The list is
    copied; messages without attachments are shared."""
    ids = [b["id"] for m in messages if isinstance(m.get("content"), list) for b in m["content"] if b.get("type") == BLOCK]
    if not ids:
        return messages
    by_id = {str(a.pk): a for a in Attachment.objects.filter(pk__in=ids)}
    out: list[dict[str, Any]] = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, list) or not any(b.get("type") == BLOCK for b in content):
            out.append(m)
            continue
        blocks: list[dict[str, Any]] = []
        for b in content:
            if b.get("type") != BLOCK:
                blocks.append(b)
                continue
            att = by_id.get(b["id"])
            is_pdf = b["content_type"] == PDF
            if att is None:
                blocks.append(_note(b, "no longer available"))
            elif (is_pdf and not documents) or (not is_pdf and not images):
                blocks.append(_note(b, f"attached, but this model cannot read {'PDF documents' if is_pdf else 'images'}"))
            else:
                try:
                    with att.file.open("rb") as fh:
                        data = base64.b64encode(fh.read()).decode("ascii")
                except OSError:
                    log.warning("attachment %s: file missing from storage", att.pk)
                    blocks.append(_note(b, "no longer available"))
                    continue
                source = {"type": "base64", "media_type": att.content_type, "data": data}
                blocks.append({"type": "document", "source": source, "title": att.name} if is_pdf else {"type": "image", "source": source})
        out.append({**m, "content": blocks})
    return out


def blocks_redact(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of request messages for diagnostics: each attachment's base64 replaced by its length."""
    out = copy.deepcopy(messages)
    for m in out:
        content = m.get("content")
        for b in content if isinstance(content, list) else []:
            source = b.get("source") if isinstance(b, dict) else None
            if isinstance(source, dict) and source.get("type") == "base64":
                source["data"] = f"<{len(source.get('data') or '')} base64 characters>"
    return out
