"""Uploads under load: the memory an image costs is bounded before it is decoded and one image is decoded at a time
(a real server's peak RSS, read from outside), and the cap on unsent uploads holds for concurrent uploads."""
from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections
from django.test import Client
from PIL import ExifTags, Image

from chat.models import Attachment
from chat.userdata import attachments
from tests.bench.server import Server
from tests.bench.upload_memory import hostile_png, measure, memory_bound
from tests.conftest import token_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


def upload(user: Any, data: bytes, name: str = "image.png") -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return client.post("/api/attachments/", {"file": SimpleUploadedFile(name, data, content_type="application/octet-stream")})


def encoded(img: Image.Image, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    img.save(out, format=fmt, **options)
    return out.getvalue()


# ---- the decode budget ---------------------------------------------------------------------------


def test_an_image_too_costly_to_decode_is_refused_before_it_is_decoded(user: Any) -> None:
    """150 KB of PNG that decodes to 144 MB (6000 x 6000 RGBA, under the 40-megapixel cap) is `too_large`."""
    r = upload(user, hostile_png(), "bomb.png")
    assert r.status_code == 413 and r.json()["code"] == "too_large", r.content
    assert "6000 x 6000" in r.json()["message"] and "16.8 megapixels" in r.json()["message"]
    assert not Attachment.objects.exists()


def test_the_budget_counts_what_each_kind_of_image_costs(user: Any) -> None:
    """A WebP costs three times a PNG per pixel (its decoder keeps the frame three times): the default 128 MiB takes
    a 5.6-megapixel WebP and a 16.8-megapixel PNG, so 2400 x 2400 is refused as a WebP and stored as a PNG."""
    img = Image.linear_gradient("L").resize((2400, 2400)).convert("RGB")
    r = upload(user, encoded(img, "WEBP", quality=50), "big.webp")
    assert r.status_code == 413 and r.json()["code"] == "too_large" and "5.6 megapixels" in r.json()["message"], r.content
    r = upload(user, encoded(img, "PNG"), "big.png")
    assert r.status_code == 201 and r.json()["width"] == 2400, r.content


def test_a_phone_photo_is_accepted_upright_with_a_thumbnail(user: Any) -> None:
    """A 12-megapixel JPEG a phone took in portrait (EXIF orientation 6): turned upright, thumbnailed."""
    exif = Image.Exif()
    exif[ExifTags.Base.Make], exif[ExifTags.Base.Orientation] = "Phone", 6
    photo = Image.linear_gradient("L").resize((4032, 3024)).convert("RGB")
    r = upload(user, encoded(photo, "JPEG", quality=85, exif=exif), "IMG_0001.jpg")
    assert r.status_code == 201, r.content
    assert (r.json()["width"], r.json()["height"]) == (3024, 4032)
    with Image.open(Attachment.objects.get().thumbnail.open("rb")) as thumb:
        assert thumb.size == (240, 320)


def test_a_large_image_with_transparency_gets_its_thumbnail_from_strips(user: Any) -> None:
    """Alpha is averaged in strips (never premultiplied at full size): transparent shows white, opaque keeps its colour."""
    img = Image.new("RGBA", (1600, 800), (0, 0, 0, 0))
    img.paste((200, 0, 0, 255), (800, 0, 1600, 800))
    r = upload(user, encoded(img, "PNG"), "half.png")
    assert r.status_code == 201, r.content
    with Image.open(Attachment.objects.get().thumbnail.open("rb")) as thumb:
        rgb = thumb.convert("RGB")
        assert thumb.size == (320, 160)
        assert min(rgb.getpixel((40, 80))) > 240  # white where it was transparent
        red = rgb.getpixel((280, 80))
        assert red[0] > 180 and red[1] < 40 and red[2] < 40


def test_uploads_wait_for_their_turn_and_are_refused_when_it_takes_too_long(user: Any, monkeypatch: Any) -> None:
    """While the process's upload reader is busy an upload waits for its turn; past DECODE_WAIT_SECONDS it is
    `rate_limited` (and never read)."""
    monkeypatch.setattr(attachments, "DECODE_WAIT_SECONDS", 0.3)
    png = encoded(Image.new("RGB", (40, 30), (1, 2, 3)), "PNG")
    busy = threading.Event()
    attachments._reader.submit(busy.wait, 10)  # another upload being read
    try:
        r = upload(user, png, "refused.png")
        assert r.status_code == 429 and r.json()["code"] == "rate_limited" and "busy reading other uploads" in r.json()["message"]
        assert not Attachment.objects.exists()

        monkeypatch.setattr(attachments, "DECODE_WAIT_SECONDS", 10)
        answers: list[Any] = []
        waiting = threading.Thread(target=lambda: answers.append(_in_thread(lambda: upload(user, png, "queued.png"))))
        waiting.start()
        time.sleep(0.5)
        assert not answers  # queued behind the one being read
    finally:
        busy.set()
    waiting.join(10)
    assert answers and answers[0].status_code == 201


def _in_thread(work: Callable[[], Any]) -> Any:
    """Run `work` in this (non-main) thread and close its database connection after."""
    try:
        return work()
    finally:
        connections.close_all()


# ---- peak memory of a real server ----------------------------------------------------------------


def _database_url() -> str:
    """The URL of the database this test runs on (the test database), for the server process."""
    db = django_settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def uvicorn_server(tmp_path: Path, monkeypatch: Any) -> Iterator[Server]:
    """uvicorn as deployed (DEBUG off, MALLOC_ARENA_MAX=2, one process) on this test's database."""
    monkeypatch.delenv("SQLITE_TEST_NAME", raising=False)
    env = {"DEBUG": "0", "SECRET_KEY": "upload-memory-" + "k" * 40, "ALLOWED_HOSTS": "127.0.0.1", "DATABASE_URL": _database_url(),
           "REDIS_URL": "", "MEDIA_ROOT": str(tmp_path / "media"), "CHAT_PROVIDER": "offline", "MALLOC_ARENA_MAX": "2"}
    server = Server("uvicorn", "config.asgi:application", env, tmp_path / "logs", server="uvicorn").start()
    try:
        yield server
    finally:
        server.stop()
    assert "Traceback" not in (tmp_path / "logs" / "uvicorn.log").read_text()


@pytest.mark.serial  # a memory figure of a server under eight uploads at once: measured alone, not beside other tests
def test_hostile_and_budget_sized_uploads_at_once_stay_within_the_memory_bound(user: Any, uvicorn_server: Server) -> None:
    """Four 150 KB PNGs that decode to 144 MB each and four images at the decode budget (a 4 MB photo among them),
    sent at once to a real uvicorn: the hostile ones are `too_large`, the others stored with thumbnails, and the
    server's peak RSS (VmHWM, read from /proc) grows by at most CHAT_MAX_IMAGE_DECODE_BYTES + 8 x
    CHAT_MAX_ATTACHMENT_BYTES (168 MiB; measured 140-145). Before the budget and the one upload reader it grew by
    1.1 GiB and took every one; with the budget but each upload decoded at once, by 650 MiB."""
    decode_bytes, attachment_bytes = 128 * 1024 * 1024, 5 * 1024 * 1024
    figures = measure(uvicorn_server.port, uvicorn_server.pid, token_for(user), hostile=4, legit=4, decode_bytes=decode_bytes,
                      attachment_bytes=attachment_bytes)
    print(figures)
    statuses = [(u["file"], u["status"], u["code"]) for u in figures["uploads"]]
    assert [s for s in statuses if s[0] == "hostile.png"] == [("hostile.png", 413, "too_large")] * 4, statuses
    assert all(u["status"] == 201 and u["width"] == 4096 and u["thumbnail"] for u in figures["uploads"] if u["file"] != "hostile.png"), statuses
    assert figures["peak_reset"], "the kernel lets the process's peak RSS be reset (/proc/<pid>/clear_refs)"
    assert figures["growth_mib"] * 1024 * 1024 <= memory_bound(decode_bytes, attachment_bytes), figures


# ---- the cap on unsent uploads -------------------------------------------------------------------


PHOTO_PNG = encoded(Image.linear_gradient("L").resize((1600, 1200)).convert("RGB"), "PNG")


def _concurrent_uploads(user: Any, count: int) -> list[int]:
    """`count` uploads of the user's, each in its own thread (its own database connection), released at once: a
    photo-sized PNG, so that each spends as long between its count and its insert as a real upload does (reading it)."""
    png = PHOTO_PNG
    token_for(user)
    start = threading.Barrier(count)
    statuses: list[int] = []

    def one(i: int) -> None:
        def work() -> None:
            client = Client(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
            start.wait(10)
            statuses.append(client.post("/api/attachments/", {"file": SimpleUploadedFile(f"{i}.png", png)}).status_code)

        _in_thread(work)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return sorted(statuses)


def test_thirty_concurrent_uploads_keep_exactly_the_twenty_allowed(user: Any) -> None:
    """4 x CHAT_MAX_ATTACHMENTS_PER_MESSAGE (20) unsent uploads at most, however many arrive at once (the count and
    the insert are one transaction under a lock on the user's row): on SQLite here, on PostgreSQL in the services
    run. Before, each upload counted before any of them was stored: all 30 were kept."""
    statuses = _concurrent_uploads(user, 30)
    assert statuses == [201] * 20 + [429] * 10, statuses
    assert Attachment.objects.filter(owner=user, message__isnull=True).count() == 20


def test_thirty_concurrent_uploads_for_the_last_free_place_keep_one(user: Any) -> None:
    """With 19 waiting, 30 at once race for the last place: one is kept (before: 10 to 16 of them)."""
    png = encoded(Image.new("RGB", (40, 30), (9, 9, 9)), "PNG")
    for i in range(19):
        assert upload(user, png, f"waiting-{i}.png").status_code == 201
    statuses = _concurrent_uploads(user, 30)
    assert statuses == [201] + [429] * 29, statuses
    assert Attachment.objects.filter(owner=user, message__isnull=True).count() == 20


@pytest.mark.services
def test_thirty_concurrent_uploads_keep_exactly_the_twenty_allowed_on_postgresql(user: Any) -> None:
    """The same on PostgreSQL (READ COMMITTED: without the row lock each transaction counts only committed rows)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs DATABASE_URL of a PostgreSQL database")
    statuses = _concurrent_uploads(user, 30)
    assert statuses == [201] * 20 + [429] * 10, statuses
    Attachment.objects.filter(owner=user).order_by("created_at")[:1].get().delete()  # one place free again
    statuses = _concurrent_uploads(user, 30)
    assert statuses == [201] + [429] * 29, statuses
    assert Attachment.objects.filter(owner=user, message__isnull=True).count() == 20
