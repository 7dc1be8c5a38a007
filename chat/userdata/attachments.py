"""Attachments: images and PDFs a user sends with a message, from upload to claim (what clients and the model see of
them: chat.userdata.blocks).

An upload is judged by its bytes (magic numbers, then Pillow for images), never by its name or the request's
content type; an image is stored without its metadata (EXIF with the place a photo was taken, XMP, comments), its
orientation applied to the pixels; it is stored through Django's storage API under a random name, served only to its owner, and turned
into the model's content blocks (Anthropic-style `image` / `document`, or a plain note for a model that cannot
read them) when a turn's history is built.
"""
from __future__ import annotations

import ctypes
import hashlib
import io
import logging
import os
import re
import threading
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone
from PIL import ExifTags, Image, ImageOps, JpegImagePlugin, UnidentifiedImageError

from chat.conf import chat_settings
from chat.events.errors import BadRequest, NotFound, RateLimited
from chat.models import Attachment, Message

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.core.files.uploadedfile import UploadedFile

log = logging.getLogger(__name__)

# Pillow's format -> the type stored. "MPO" is a JPEG with more images after the first (phones add a depth or gain map).
IMAGE_TYPES: dict[str, str] = {"PNG": "image/png", "JPEG": "image/jpeg", "MPO": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
PDF = "application/pdf"
ACCEPTED_TYPES: tuple[str, ...] = (*dict.fromkeys(IMAGE_TYPES.values()), PDF)
THUMBNAIL_SIZE = (320, 320)
MAX_IMAGE_PIXELS = 40_000_000  # a larger image is refused (decompression bombs; no model takes it whole anyway)
DECODE_WAIT_SECONDS = 30.0  # an upload waits this long for its turn to be read (`_read_in_turn`), then is refused (`rate_limited`)
UNSENT_PER_MESSAGE_LIMIT = 4  # a user may have this many messages' worth of uploads waiting to be sent


def content_type_sniff(head: bytes) -> str | None:
    """The accepted content type these first bytes announce (magic numbers), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return PDF
    return None


def name_clean(name: str) -> str:
    """The uploaded name for display: its last path part, no control characters, at most 200 characters."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = "".join(ch for ch in unicodedata.normalize("NFC", base) if unicodedata.category(ch)[0] != "C").strip()
    return (base or "attachment")[:200]


@dataclass(frozen=True)
class ImageFacts:
    width: int
    height: int
    thumbnail: bytes
    data: bytes  # what is stored and sent to the model: the upload without its metadata


# What Pillow reads from an image that only says how to show it; anything else it finds (EXIF with the camera, the
# time and the place, XMP, comments, a PNG's text chunks such as Author) is metadata, and is not kept.
_PRESENTATION = frozenset({"dpi", "jfif", "jfif_version", "jfif_density", "jfif_unit", "adobe", "adobe_transform", "progressive",
                           "progression", "icc_profile", "gamma", "srgb", "chromaticity", "aspect", "transparency", "background", "loop",
                           "duration"})


def _metadata_stripped(data: bytes) -> bytes:
    """The image without its metadata and with its EXIF orientation applied to the pixels; `data` itself when it has
    none (or is animated, or a GIF: kept as uploaded). A JPEG keeps its quantization, turned or not (no second loss of
    quality, and about its size); a PNG stays lossless; a JPEG with more images (MPO) is kept as its first, a plain JPEG."""
    with Image.open(io.BytesIO(data)) as img:
        multi = img.format == "MPO"
        fmt = "JPEG" if multi else img.format
        if fmt not in ("JPEG", "PNG", "WEBP") or (getattr(img, "is_animated", False) and not multi):
            return data
        if fmt == "PNG":
            img.load()  # a PNG's text chunks after its pixels are read only with them (JPEG and WebP metadata come first)
        if not set(img.info) - _PRESENTATION and not multi:
            return data
        kept: dict[str, Any] = {"icc_profile": img.info["icc_profile"]} if img.info.get("icc_profile") else {}
        if fmt == "JPEG":
            kept["comment"] = b""  # Pillow copies a JPEG's comment unless told otherwise
        turned = img.getexif().get(ExifTags.Base.Orientation, 1) not in (None, 1)
        upright = ImageOps.exif_transpose(img) if turned else img  # a copy at full size only when it is turned
        options: dict[str, Any] = {}
        if isinstance(img, JpegImagePlugin.JpegImageFile):  # an MPO too. What "keep" does, for a turned copy as well: at
            # quality 95 a turned photo came out up to three times its size (past the 5 MB a model takes)
            options = {"qtables": img.quantization, "subsampling": JpegImagePlugin.get_sampling(img)}
        elif fmt == "WEBP":
            options = {"quality": 95}
        out = io.BytesIO()
        upright.load()  # saved unloaded, Pillow would copy the image from a file object at full size first
        upright.save(out, format=fmt, **kept, **options)  # EXIF and XMP are written only when passed
        return out.getvalue()


def decode_cost_per_pixel(fmt: str, mode: str) -> int:
    """Bytes of memory reading an image takes per pixel, at most: its decoded pixel as Pillow holds it (a byte for
    bilevel, greyscale and palette images, two for 16-bit greyscale, four for anything else: RGB too) twice, once
    decoded and once more while it is turned upright or its thumbnail is made; six times for a WebP (Pillow reads every
    WebP through libwebp's animation decoder, which keeps two frames of four bytes a pixel and hands one over as a copy).
    Measured from outside a server process by tests/bench/upload_memory.py."""
    per_pixel = 4 if fmt == "WEBP" else 1 if mode in ("1", "L", "P") else 2 if mode.startswith("I;16") else 4
    return per_pixel * (6 if fmt == "WEBP" else 2)


# One upload read and its image decoded at a time per process, in one thread of its own: the decode is the costly
# part (a PNG of a few KB can decode to hundreds of MB), so concurrent uploads queue for it instead of each holding a
# decode, a waiting upload's bytes stay where Django put them (on disk past FILE_UPLOAD_MAX_MEMORY_SIZE), and the
# decodes' large blocks are freed and reused by the same thread (decoded by each request's thread, one at a time,
# eight 5 MB photos sent at once took 295 MiB instead of 154: the C allocator kept each thread's freed blocks apart).
_reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pagechat-upload-reader")


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None off glibc (as chat/runs/malloc.py loads it; that module sits in a higher layer)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (AttributeError, OSError, ValueError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


# After each image the reader hands the pages its decode freed back to the OS: freed blocks left between other
# threads' allocations stay resident otherwise, and the next decode's peak stacks on them (daphne: up to 190 MiB
# where one decode needs 150; milliseconds a decode, in the reader's thread, never on the event loop).
_heap_trim = _malloc_trim()


def _read_in_turn[T](read: Callable[[], T]) -> T:
    """`read()` in the process's upload reader (`_reader`) once the uploads ahead of it are done; `rate_limited` when
    its turn has not come within DECODE_WAIT_SECONDS."""
    started = threading.Event()

    def turn() -> T:
        started.set()
        return read()

    future = _reader.submit(turn)
    if not started.wait(DECODE_WAIT_SECONDS) and future.cancel():
        raise RateLimited("The server is busy reading other uploads: try again in a moment.")
    return future.result()


def _thumbnail(img: Image.Image) -> bytes:
    """A JPEG of the (first frame of the) image at most THUMBNAIL_SIZE, flattened on white. Never a second full-size
    copy: a JPEG is decoded at 1/2 to 1/8 of its size (draft), anything else box-averaged to about twice the
    thumbnail first (an image with alpha strip by strip: Pillow premultiplies it at full size to scale it)."""
    img.seek(0)
    img.draft(None, (THUMBNAIL_SIZE[0] * 2, THUMBNAIL_SIZE[1] * 2))  # only a JPEG takes it (a no-op for the others)
    factor = int(max(img.width / THUMBNAIL_SIZE[0], img.height / THUMBNAIL_SIZE[1]) / 2)
    small: Image.Image = img
    if factor > 1 and img.mode in ("RGBA", "LA"):
        small = Image.new(img.mode, (-(-img.width // factor), -(-img.height // factor)))
        rows = factor * 64
        for top in range(0, img.height, rows):
            small.paste(img.crop((0, top, img.width, min(top + rows, img.height))).reduce(factor), (0, top // factor))
    small.thumbnail(THUMBNAIL_SIZE)  # other modes: Pillow reduces them straight from the decoded pixels
    rgb = small.convert("RGBA")
    flat = Image.new("RGB", rgb.size, (255, 255, 255))
    flat.paste(rgb, mask=rgb.getchannel("A"))
    out = io.BytesIO()
    flat.save(out, format="JPEG", quality=80)
    return out.getvalue()


def _image_facts(data: bytes, content_type: str) -> ImageFacts:
    """Pillow's reading of an image whose magic number said `content_type`: it must agree, decode and be of sane size
    (at most MAX_IMAGE_PIXELS, and CHAT_MAX_IMAGE_DECODE_BYTES of memory to read: `too_large` before decoding)."""
    try:
        with Image.open(io.BytesIO(data)) as probe:
            if IMAGE_TYPES.get(probe.format or "") != content_type:
                raise BadRequest("The file's contents do not match an image type it claims.", code="unsupported_type")
            width, height = probe.size
            most = min(MAX_IMAGE_PIXELS, chat_settings.CHAT_MAX_IMAGE_DECODE_BYTES // decode_cost_per_pixel(probe.format or "", probe.mode))
            if width * height > most:  # refused before it is decoded
                raise BadRequest(f"The image is too large ({width} x {height} pixels; at most {most / 1e6:.1f} megapixels).",
                                 code="too_large")
            probe.verify()
        data = _metadata_stripped(data)  # verify() leaves the image unusable: each step opens it again
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size  # upright now
            thumbnail = _thumbnail(img)
    except BadRequest:
        raise
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError, SyntaxError) as exc:
        log.info("attachment image refused: %s", exc)
        raise BadRequest("The image could not be read.", code="unsupported_type") from None
    return ImageFacts(width=width, height=height, thumbnail=thumbnail, data=data)


def _judged(upload: UploadedFile, limit: int) -> tuple[bytes, str, ImageFacts | None]:
    """The upload's bytes as they are to be stored (an image without its metadata), its sniffed type and, for an
    image, Pillow's reading of it; or `too_large` / `unsupported_type`. Runs in the upload reader (`_read_in_turn`)."""
    data = upload.read(limit + 1)
    if len(data) > limit:
        raise BadRequest(f"The file is larger than {_size_text(limit)}.", code="too_large")
    if not data:
        raise BadRequest("The file is empty.", code="unsupported_type")
    content_type = content_type_sniff(data[:16])
    if content_type is None:
        raise BadRequest("Only images (PNG, JPEG, WebP, GIF) and PDF files can be attached.", code="unsupported_type")
    try:
        facts = _image_facts(data, content_type) if content_type != PDF else None
    finally:
        if _heap_trim is not None and content_type != PDF:
            _heap_trim(0)
    return (facts.data if facts is not None else data), content_type, facts


def _unsent_room_check(user: User) -> None:
    """`rate_limited` when the user already has four messages' worth of uploads waiting to be sent (storage is not a dump)."""
    waiting = Attachment.objects.filter(owner=user, message__isnull=True).count()
    if waiting >= UNSENT_PER_MESSAGE_LIMIT * chat_settings.CHAT_MAX_ATTACHMENTS_PER_MESSAGE:
        raise RateLimited("Too many files are waiting to be sent: send or remove some first.")


def attachment_create(*, user: User, upload: UploadedFile) -> Attachment:
    """Store an upload as the user's unsent attachment, or refuse it (`too_large`, `unsupported_type`, `rate_limited`)."""
    limit = chat_settings.CHAT_MAX_ATTACHMENT_BYTES
    _unsent_room_check(user)  # early, so a user at the cap costs no decode; the count that decides is below
    if upload.size is not None and upload.size > limit:
        raise BadRequest(f"The file is larger than {_size_text(limit)}.", code="too_large")
    data, content_type, facts = _read_in_turn(lambda: _judged(upload, limit))
    if content_type == PDF and b"%%EOF" not in data[-2048:]:
        raise BadRequest("The PDF file is incomplete.", code="unsupported_type")
    att = Attachment(owner=user, name=name_clean(upload.name or ""), content_type=content_type, size=len(data),
                     sha256=hashlib.sha256(data).hexdigest())
    if facts is not None:
        att.width, att.height = facts.width, facts.height
    att.file.save("upload", ContentFile(data), save=False)
    try:
        if facts is not None:
            att.thumbnail.save("thumbnail", ContentFile(facts.thumbnail), save=False)
        # count and insert under a lock on the user's row, so concurrent uploads cannot all see room for one more:
        # PostgreSQL takes a row lock (FOR UPDATE); SQLite ignores FOR UPDATE but a write transaction holds the whole
        # database (BEGIN IMMEDIATE: the `transaction_mode` config/settings.py sets)
        with transaction.atomic():
            list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk"))
            _unsent_room_check(user)
            att.save()
    except Exception:
        for f in (att.file, att.thumbnail):
            if f.name:
                f.storage.delete(f.name)
        raise
    return att


def attachment_get(*, user: User, attachment_id: str) -> Attachment | None:
    """The user's attachment by id (sent or not); someone else's id is None exactly like a missing one."""
    try:
        pk = uuid.UUID(str(attachment_id))
    except ValueError:
        return None
    return Attachment.objects.filter(pk=pk, owner=user).first()


def attachment_discard(*, user: User, attachment_id: str) -> None:
    """Delete one of the user's unsent attachments (the tray's chip "Remove"); a sent one stays with its message."""
    att = attachment_get(user=user, attachment_id=attachment_id)
    if att is None or att.message_id is not None:
        raise NotFound("attachment not found")
    att.delete()  # its files follow after commit (chat.api.revocation)


def attachments_count_check(count: int) -> None:
    """`too_large` when one message would carry more than `CHAT_MAX_ATTACHMENTS_PER_MESSAGE` attachments."""
    if count > chat_settings.CHAT_MAX_ATTACHMENTS_PER_MESSAGE:
        raise BadRequest(f"A message can carry at most {chat_settings.CHAT_MAX_ATTACHMENTS_PER_MESSAGE} attachments.",
                         code="too_large")


def attachments_claim(*, user: User, ids: Iterable[str], message: Message) -> list[Attachment]:
    """Attach the user's unsent attachments to `message` (inside the caller's transaction); any other id is NotFound."""
    wanted: list[uuid.UUID] = []
    for raw in ids:
        try:
            pk = uuid.UUID(str(raw))
        except ValueError:
            raise NotFound("attachment not found") from None
        if pk not in wanted:
            wanted.append(pk)
    if not wanted:
        return []
    attachments_count_check(len(wanted))
    found = list(Attachment.objects.select_for_update().filter(pk__in=wanted, owner=user, message__isnull=True))
    if len(found) != len(wanted):
        raise NotFound("attachment not found")
    for position, pk in enumerate(wanted):  # the order the sender chose, not the order the uploads finished in
        Attachment.objects.filter(pk=pk).update(message=message, conversation_id=message.conversation_id, position=position)
    order = {pk: i for i, pk in enumerate(wanted)}
    return sorted(found, key=lambda a: order[a.pk])


def attachments_unsent_purge(*, hours: float, dry_run: bool = False) -> list[str]:
    """Remove uploads no message claimed within `hours` (their files follow after commit); the files' names."""
    old = Attachment.objects.filter(message__isnull=True, created_at__lt=timezone.now() - timedelta(hours=hours))
    names = [f.name for att in old for f in (att.file, att.thumbnail) if f.name]
    if not dry_run:
        with transaction.atomic():
            old.delete()
    return names


def _size_text(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MB" if n >= 1024 * 1024 else f"{max(n // 1024, 1)} KB"
