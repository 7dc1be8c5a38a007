"""Attachments: judged by their bytes, stored per user, sent with chat.send (websocket and REST), turned into the
providers' content blocks (the real SDKs against the fake Anthropic and OpenAI servers), shown in the history,
exported, and removed with their conversation."""
from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.core.management import call_command
from django.test import Client
from PIL import ExifTags, Image
from PIL.PngImagePlugin import PngInfo

from chat.models import Attachment, Conversation, Message, Run
from chat.providers import scripted as s
from chat.userdata.attachments import content_type_sniff, name_clean
from tests.conftest import token_for, ws_connect
from tests.fakes.anthropic_server import FakeAnthropicServer, text_response
from tests.fakes.openai_server import FakeOpenAIServer, recorded

pytestmark = pytest.mark.django_db(transaction=True)


def png_bytes(size: tuple[int, int] = (40, 30), color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def pdf_bytes(text: str = "Hello PDF") -> bytes:
    """A small, well-formed one-page PDF (objects, cross-reference table, trailer)."""
    stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


def api(user: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {token_for(user)}")


def upload(user: Any, data: bytes, name: str, content_type: str = "application/octet-stream") -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return api(user).post("/api/attachments/", {"file": SimpleUploadedFile(name, data, content_type=content_type)})


def stored_files(media: Path) -> list[Path]:
    return [p for p in media.rglob("*") if p.is_file()] if media.exists() else []


# ---- judging an upload ---------------------------------------------------------------------------


@pytest.mark.parametrize(("head", "expected"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
    (b"GIF89a\x01\x00", "image/gif"),
    (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
    (b"%PDF-1.7\n", "application/pdf"),
    (b"<html><script>", None),
    (b"<svg xmlns=", None),
    (b"PK\x03\x04", None),
    (b"", None),
])
def test_content_type_is_sniffed_from_the_bytes(head: bytes, expected: str | None) -> None:
    assert content_type_sniff(head) == expected


def test_names_are_cleaned_for_display() -> None:
    assert name_clean("../../etc/passwd") == "passwd"
    assert name_clean("C:\\Users\\ann\\photo.png") == "photo.png"
    assert name_clean("bad\x00\u202ename.png") == "badname.png"
    assert name_clean("") == "attachment"


def test_upload_an_image_stores_it_with_a_thumbnail_under_a_random_name(user: Any, media: Path) -> None:
    data = png_bytes((800, 400))
    r = upload(user, data, "holiday photo.png", "image/png")
    assert r.status_code == 201, r.content
    body = r.json()
    assert set(body) == {"id", "name", "content_type", "size", "width", "height", "url", "thumbnail_url"}
    assert (body["name"], body["content_type"], body["size"], body["width"], body["height"]) == ("holiday photo.png", "image/png", len(data), 800, 400)
    att = Attachment.objects.get(pk=body["id"])
    assert att.owner == user and att.message is None and "holiday" not in att.file.name and str(user.pk) in att.file.name
    f = api(user).get(body["url"])
    assert f.status_code == 200 and b"".join(f.streaming_content) == data
    assert f["Content-Type"] == "image/png" and f["X-Content-Type-Options"] == "nosniff"
    assert f["Content-Disposition"].startswith("inline") and "sandbox" in f["Content-Security-Policy"]
    t = api(user).get(body["thumbnail_url"])
    assert t.status_code == 200 and t["Content-Type"] == "image/jpeg"
    with Image.open(io.BytesIO(b"".join(t.streaming_content))) as thumb:
        assert thumb.format == "JPEG" and max(thumb.size) <= 320
    assert len(stored_files(media)) == 2


def photo_with_metadata(fmt: str, orientation: int = 1) -> bytes:
    """A 60 x 20 image, left half red, right half blue, that says where it was taken (EXIF GPS), by which camera, and
    whose it is (XMP; a comment in a JPEG); `orientation` 6 says "turn it a quarter clockwise to show it"."""
    img = Image.new("RGB", (60, 20), (220, 0, 0))
    img.paste((0, 0, 220), (30, 0, 60, 20))
    exif = Image.Exif()
    exif[ExifTags.Base.Make], exif[ExifTags.Base.Orientation] = "SpyCam", orientation
    exif[ExifTags.IFD.GPSInfo] = {ExifTags.GPS.GPSLatitudeRef: "N", ExifTags.GPS.GPSLatitude: (48.0, 51.0, 24.0)}
    extra: dict[str, Any] = {"comment": b"Alice's flat"} if fmt == "JPEG" else {}
    if fmt == "PNG":  # text chunks
        extra["pnginfo"] = PngInfo()
        extra["pnginfo"].add_text("Author", "Alice Owner")
        extra["pnginfo"].add_itxt("XML:com.adobe.xmp", "<x:xmpmeta>Alice Owner</x:xmpmeta>")
    out = io.BytesIO()
    img.save(out, format=fmt, exif=exif, xmp=b"<x:xmpmeta>Alice Owner</x:xmpmeta>", **extra)
    return out.getvalue()


@pytest.mark.parametrize(("fmt", "content_type"), [("JPEG", "image/jpeg"), ("PNG", "image/png"), ("WEBP", "image/webp")])
def test_an_image_is_stored_and_sent_without_its_metadata(user: Any, fmt: str, content_type: str) -> None:
    data = photo_with_metadata(fmt)
    assert b"SpyCam" in data and b"Alice" in data
    body = upload(user, data, "photo", content_type).json()
    stored = b"".join(api(user).get(body["url"]).streaming_content)
    assert b"SpyCam" not in stored and b"Alice" not in stored
    with Image.open(io.BytesIO(stored)) as img:
        assert img.format == fmt and not img.getexif() and (img.width, img.height) == (60, 20)
        assert img.convert("RGB").getpixel((5, 10))[0] > 180 and img.convert("RGB").getpixel((55, 10))[2] > 180
        if fmt == "PNG":  # lossless: the same pixels
            with Image.open(io.BytesIO(data)) as original:
                assert img.convert("RGB").tobytes() == original.convert("RGB").tobytes()
    assert body["size"] == len(stored)
    att = Attachment.objects.get(pk=body["id"])
    assert att.sha256 == hashlib.sha256(stored).hexdigest() and att.file.open("rb").read() == stored  # what the model is sent


def test_a_turned_photo_is_stored_upright_with_an_upright_thumbnail(user: Any) -> None:
    body = upload(user, photo_with_metadata("JPEG", orientation=6), "portrait.jpg", "image/jpeg").json()
    assert (body["width"], body["height"]) == (20, 60)  # as a viewer shows it: red on top after a quarter turn clockwise
    for url in (body["url"], body["thumbnail_url"]):
        with Image.open(io.BytesIO(b"".join(api(user).get(url).streaming_content))) as img:
            rgb = img.convert("RGB")
            assert img.width < img.height and rgb.getpixel((img.width // 2, 2))[0] > 180 and rgb.getpixel((img.width // 2, img.height - 3))[2] > 180
            assert not img.getexif()


def test_a_phone_jpeg_with_a_second_image_is_accepted_as_its_first_without_metadata(user: Any) -> None:
    """Phones write JPEGs with a depth or gain map as a second image (MPF: Pillow reads them as "MPO")."""
    main, second = Image.new("RGB", (40, 20), (220, 0, 0)), Image.new("RGB", (10, 5), (0, 0, 220))
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = "SpyCam"
    out = io.BytesIO()
    main.save(out, format="MPO", save_all=True, append_images=[second], exif=exif)
    r = upload(user, out.getvalue(), "IMG_0001.jpg", "image/jpeg")
    assert r.status_code == 201, r.content
    body = r.json()
    assert (body["content_type"], body["width"], body["height"]) == ("image/jpeg", 40, 20)
    stored = b"".join(api(user).get(body["url"]).streaming_content)
    with Image.open(io.BytesIO(stored)) as img:
        assert img.format == "JPEG" and getattr(img, "n_frames", 1) == 1 and not img.getexif() and b"SpyCam" not in stored


def test_an_image_without_metadata_is_stored_byte_for_byte(user: Any) -> None:
    out = io.BytesIO()
    Image.new("RGB", (30, 30), (10, 200, 10)).save(out, format="JPEG", quality=70)
    body = upload(user, out.getvalue(), "plain.jpg", "image/jpeg").json()
    assert b"".join(api(user).get(body["url"]).streaming_content) == out.getvalue()


def test_a_pdf_is_a_download_without_thumbnail(user: Any) -> None:
    body = upload(user, pdf_bytes(), "report.pdf", "application/pdf").json()
    assert body["content_type"] == "application/pdf" and body["thumbnail_url"] is None and body["width"] is None
    f = api(user).get(body["url"])
    assert f["Content-Type"] == "application/pdf" and f["Content-Disposition"].startswith("attachment")
    assert api(user).get(body["url"] + "thumbnail/").status_code == 404


@pytest.mark.parametrize(("data", "name", "claimed"), [
    (b"<html><script>alert(1)</script></html>", "cute.png", "image/png"),  # the name and the header lie
    (b"\x89PNG\r\n\x1a\n" + b"not really an image" * 10, "broken.png", "image/png"),  # magic number, no image
    (b"PK\x03\x04 zip", "report.pdf", "application/pdf"),
    (b"%PDF-1.4\n(no end)", "cut.pdf", "application/pdf"),  # an incomplete PDF
    (b"", "empty.png", "image/png"),
])
def test_anything_else_is_refused_as_unsupported(user: Any, media: Path, data: bytes, name: str, claimed: str) -> None:
    r = upload(user, data, name, claimed)
    assert r.status_code == 415 and r.json()["code"] == "unsupported_type"
    assert not Attachment.objects.exists() and stored_files(media) == []


def test_the_size_limit(user: Any, settings: Any, media: Path) -> None:
    settings.CHAT_MAX_ATTACHMENT_BYTES = 1000
    r = upload(user, png_bytes((600, 600), (1, 2, 3)) + b"\x00" * 2000, "big.png", "image/png")
    assert r.status_code == 413 and r.json()["code"] == "too_large" and "1 KB" in r.json()["message"]
    assert not Attachment.objects.exists() and stored_files(media) == []


def test_uploads_waiting_to_be_sent_are_bounded(user: Any, settings: Any) -> None:
    settings.CHAT_MAX_ATTACHMENTS_PER_MESSAGE = 1
    for i in range(4):
        assert upload(user, png_bytes(), f"{i}.png").status_code == 201
    r = upload(user, png_bytes(), "fifth.png")
    assert r.status_code == 429 and r.json()["code"] == "rate_limited"
    assert Attachment.objects.count() == 4


def test_upload_needs_a_user_and_a_file(user: Any) -> None:
    assert Client().post("/api/attachments/", {}).status_code == 401
    r = api(user).post("/api/attachments/", {})
    assert r.status_code == 400 and r.json()["code"] == "bad_frame"


def test_someone_elses_attachment_is_exactly_a_missing_one(user: Any, other_user: Any) -> None:
    body = upload(user, png_bytes(), "mine.png").json()
    missing = "00000000-0000-0000-0000-000000000000"
    for suffix in ("", "thumbnail/"):
        theirs = api(other_user).get(body["url"] + suffix)
        nothing = api(other_user).get(f"/api/attachments/{missing}/{suffix}")
        assert theirs.status_code == nothing.status_code == 404
        assert theirs.content == nothing.content and json.loads(theirs.content)["code"] == "not_found"
    assert api(other_user).get("/api/attachments/not-a-uuid/").status_code == 404
    assert api(other_user).delete(body["url"]).status_code == 404
    assert Client().get(body["url"]).status_code == 401  # no session, no token
    assert api(user).get(body["url"]).status_code == 200


def test_an_unsent_upload_can_be_removed(user: Any, media: Path) -> None:
    body = upload(user, png_bytes(), "oops.png").json()
    assert api(user).delete(body["url"]).status_code == 204
    assert not Attachment.objects.exists() and stored_files(media) == []
    assert api(user).get(body["url"]).status_code == 404


# ---- sending them --------------------------------------------------------------------------------


async def aupload(user: Any, data: bytes, name: str) -> dict[str, Any]:
    r = await database_sync_to_async(upload)(user, data, name)
    assert r.status_code == 201, r.content
    return dict(r.json())


def blocks_of(request: Any) -> list[dict[str, Any]]:
    content = request.messages[-1]["content"]
    assert isinstance(content, list)
    return list(content)


async def test_chat_send_over_websocket_attaches_them_and_the_model_gets_the_blocks(staff_user: Any, scripted: Any) -> None:
    image, pdf = png_bytes(), pdf_bytes()
    a = await aupload(staff_user, image, "chart.png")
    b = await aupload(staff_user, pdf, "paper.pdf")
    scripted.enqueue(s.text("I see a red chart and a paper."))
    ws, _ = await ws_connect(staff_user)
    await ws.chat("What is in these?", attachments=[a["id"], b["id"]])
    events = await ws.until_terminal()
    assert events[-1]["type"] == "complete"
    blocks = blocks_of(scripted.requests[0])
    assert [x["type"] for x in blocks] == ["image", "document", "text"]
    assert blocks[0]["source"] == {"type": "base64", "media_type": "image/png", "data": base64.b64encode(image).decode()}
    assert blocks[1]["source"]["data"] == base64.b64encode(pdf).decode() and blocks[1]["title"] == "paper.pdf"
    assert blocks[2]["text"] == "What is in these?"
    conv_id = events[-1]["conversation_id"]
    question = await Message.objects.aget(conversation_id=conv_id, role="user")
    assert {str(x.pk) async for x in Attachment.objects.filter(message=question, conversation_id=conv_id)} == {a["id"], b["id"]}
    # diagnostics keep what was sent, never the bytes
    diag = events[-1]["payload"]["diagnostics"]
    assert [x["name"] for x in diag["attachments"]] == ["chart.png", "paper.pdf"]
    assert base64.b64encode(image).decode() not in json.dumps(diag)
    run = await Run.objects.aget(pk=events[-1]["run_id"])
    assert base64.b64encode(pdf).decode()[:200] not in json.dumps(run.diagnostics)
    # the next turn still shows the model the files (they are part of the conversation)
    scripted.enqueue(s.text("Still red."))
    await ws.chat("And the colour?", conversation_id=conv_id)
    await ws.until_terminal()
    first = scripted.requests[1].messages[0]["content"]
    assert [x["type"] for x in first] == ["image", "document", "text"]
    await ws.close()


async def test_attachments_are_the_senders_own_and_unsent(user: Any, other_user: Any, scripted: Any) -> None:
    theirs = await aupload(other_user, png_bytes(), "bob.png")
    mine = await aupload(user, png_bytes(), "ann.png")
    ws, _ = await ws_connect(user)
    for ids in ([theirs["id"]], [mine["id"], "00000000-0000-0000-0000-000000000000"], ["not-an-id"]):
        await ws.chat("look", attachments=ids)
        err = await ws.recv()
        assert err["type"] == "error" and err["code"] == "not_found" and "seq" not in err
    assert not await Message.objects.aexists() and not await Conversation.objects.aexists()
    scripted.enqueue(s.text("ok"))
    await ws.chat("look", attachments=[mine["id"]])
    assert (await ws.until_terminal())[-1]["type"] == "complete"
    await ws.chat("again", attachments=[mine["id"]])  # already sent: it belongs to that message now
    assert (await ws.recv())["code"] == "not_found"
    await ws.close()


async def test_the_per_message_count_limit(user: Any, settings: Any, scripted: Any) -> None:
    settings.CHAT_MAX_ATTACHMENTS_PER_MESSAGE = 2
    ids = [(await aupload(user, png_bytes(), f"{i}.png"))["id"] for i in range(3)]
    ws, _ = await ws_connect(user)
    await ws.chat("three", attachments=ids)
    err = await ws.recv()
    assert err["code"] == "too_large" and "at most 2" in err["message"]
    assert not await Message.objects.aexists()
    await ws.close()


def test_chat_send_over_rest_and_the_history_shows_them(user: Any, other_user: Any, scripted: Any) -> None:
    a = upload(user, png_bytes(), "scan.png").json()
    scripted.enqueue(s.text("A scan."))
    r = api(user).post("/api/chat", {"message": "see", "attachments": [a["id"]]}, content_type="application/json")
    assert r.status_code == 200, r.content
    assert [x["type"] for x in blocks_of(scripted.requests[0])] == ["image", "text"]
    conv = r.json()["conversation_id"]
    messages = api(user).get(f"/api/conversations/{conv}/").json()["messages"]
    assert messages[0]["attachments"] == [a] and messages[1]["attachments"] == []
    assert api(other_user).get(a["url"]).status_code == 404


def test_the_senders_order_is_kept(user: Any, scripted: Any) -> None:
    a = upload(user, png_bytes(), "first-uploaded.png").json()
    b = upload(user, pdf_bytes(), "second-uploaded.pdf").json()
    scripted.enqueue(s.text("ok"))
    r = api(user).post("/api/chat", {"message": "see", "attachments": [b["id"], a["id"]]}, content_type="application/json")
    assert [x["type"] for x in blocks_of(scripted.requests[0])] == ["document", "image", "text"]
    messages = api(user).get(f"/api/conversations/{r.json()['conversation_id']}/").json()["messages"]
    assert [x["id"] for x in messages[0]["attachments"]] == [b["id"], a["id"]]


def test_offline_model_names_what_it_cannot_read(user: Any) -> None:
    a = upload(user, png_bytes(), "chart.png").json()
    b = upload(user, pdf_bytes(), "paper.pdf").json()
    r = api(user).post("/api/chat", {"message": "what do these say?", "attachments": [a["id"], b["id"]]}, content_type="application/json")
    text = r.json()["message"]
    assert "cannot open attachments" in text and "**chart.png**" in text and "**paper.pdf**" in text


# ---- the providers' requests (real SDKs, fake servers) -------------------------------------------


def test_anthropic_gets_image_and_document_blocks(user: Any, settings: Any) -> None:
    image, pdf = png_bytes(), pdf_bytes()
    a, b = upload(user, image, "chart.png").json(), upload(user, pdf, "paper.pdf").json()
    with FakeAnthropicServer() as server:
        settings.CHAT_PROVIDER = "anthropic"
        settings.ANTHROPIC_BASE_URL = server.base_url
        settings.ANTHROPIC_API_KEY = "sk-ant-fake"
        server.enqueue(text_response("A chart ", "and a paper."))
        r = api(user).post("/api/chat", {"message": "describe", "attachments": [a["id"], b["id"]]}, content_type="application/json")
        assert r.status_code == 200 and r.json()["message"] == "A chart and a paper."
        sent = server.message_requests[0].body["messages"][-1]["content"]
    assert sent[0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(image).decode()}}
    assert sent[1]["type"] == "document" and sent[1]["title"] == "paper.pdf"
    assert sent[1]["source"] == {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(pdf).decode()}
    assert sent[2]["type"] == "text" and sent[2]["text"] == "describe"


@pytest.mark.parametrize("send_documents", [False, True])
def test_openai_gets_image_urls_and_pdfs_as_the_setting_says(user: Any, settings: Any, send_documents: bool) -> None:
    image, pdf = png_bytes(), pdf_bytes()
    a, b = upload(user, image, "chart.png").json(), upload(user, pdf, "paper.pdf").json()
    with FakeOpenAIServer() as server:
        settings.CHAT_PROVIDER = "openai"
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "sk-fake"
        settings.CHAT_OPENAI_SEND_DOCUMENTS = send_documents
        server.enqueue(recorded("text.sse"))
        r = api(user).post("/api/chat", {"message": "describe", "attachments": [a["id"], b["id"]]}, content_type="application/json")
        assert r.status_code == 200, r.content
        parts = server.completion_requests[0].body["messages"][-1]["content"]
    assert parts[0] == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(image).decode()}}
    if send_documents:
        assert parts[1] == {"type": "file", "file": {"filename": "paper.pdf",
                                                     "file_data": "data:application/pdf;base64," + base64.b64encode(pdf).decode()}}
    else:  # told plainly, not silently dropped
        assert parts[1] == {"type": "text", "text": '[Attachment <data source="file_name">paper.pdf</data> (application/pdf): '
                                                    'attached, but this model cannot read PDF documents]'}
    assert parts[2] == {"type": "text", "text": "describe"}


# ---- export and removal --------------------------------------------------------------------------


def _conversation_with_files(user: Any, scripted: Any) -> tuple[int, dict[str, Any], dict[str, Any]]:
    a, b = upload(user, png_bytes(), "chart.png").json(), upload(user, pdf_bytes(), "paper.pdf").json()
    scripted.enqueue(s.text("ok"))
    r = api(user).post("/api/chat", {"message": "keep", "attachments": [a["id"], b["id"]]}, content_type="application/json")
    return r.json()["conversation_id"], a, b


def test_export_lists_the_attachments(user: Any, scripted: Any) -> None:
    conv, a, b = _conversation_with_files(user, scripted)
    data = json.loads(api(user).get(f"/api/conversations/{conv}/export/?format=json").content)
    files = data["messages"][0]["attachments"]
    assert [(f["id"], f["name"], f["content_type"]) for f in files] == [(a["id"], "chart.png", "image/png"), (b["id"], "paper.pdf", "application/pdf")]
    text = api(user).get(f"/api/conversations/{conv}/export/?format=markdown").content.decode()
    assert "- attachment: chart.png" in text and "- attachment: paper.pdf" in text


def test_deleting_the_conversation_removes_the_files(user: Any, scripted: Any, media: Path) -> None:
    conv, a, _ = _conversation_with_files(user, scripted)
    assert len(stored_files(media)) == 3  # two files and the image's thumbnail
    assert api(user).delete(f"/api/conversations/{conv}/").status_code == 204
    assert not Attachment.objects.exists() and stored_files(media) == []
    assert api(user).get(a["url"]).status_code == 404


def test_editing_the_question_removes_its_files(user: Any, scripted: Any, media: Path) -> None:
    conv, _, _ = _conversation_with_files(user, scripted)
    scripted.enqueue(s.text("edited"))
    r = api(user).post("/api/chat", {"message": "without files", "conversation_id": conv, "replace_last": "question"},
                       content_type="application/json")
    assert r.status_code == 200 and not Attachment.objects.exists() and stored_files(media) == []


def test_chat_purge_removes_old_conversations_files_and_unsent_uploads(user: Any, scripted: Any, media: Path) -> None:
    from datetime import timedelta

    from django.utils import timezone

    _conversation_with_files(user, scripted)
    fresh = upload(user, png_bytes(), "fresh.png").json()
    stale = upload(user, png_bytes(), "stale.png").json()
    Attachment.objects.filter(pk=stale["id"]).update(created_at=timezone.now() - timedelta(hours=30))
    Conversation.objects.update(updated_at=timezone.now() - timedelta(days=40))
    out = io.StringIO()
    call_command("chat_purge", "--days", "30", stdout=out)
    assert "3 attachment file(s)" in out.getvalue() and "2 file(s) of attachments never sent" in out.getvalue()
    assert list(Attachment.objects.values_list("pk", flat=True)) == [__import__("uuid").UUID(fresh["id"])]
    assert len(stored_files(media)) == 2  # the fresh upload and its thumbnail


def test_staff_see_a_messages_attachments_and_the_runs_diagnostics(user: Any, scripted: Any, admin_client: Client) -> None:
    conv, a, b = _conversation_with_files(user, scripted)
    question = Message.objects.get(conversation_id=conv, role="user")
    page = admin_client.get(f"/admin/pagechat/message/{question.pk}/change/").content.decode()
    assert "chart.png · image/png" in page and "paper.pdf · application/pdf" in page
    run = Run.objects.get(conversation_id=conv)
    page = admin_client.get(f"/admin/pagechat/run/{run.pk}/change/").content.decode()
    assert "chart.png" in page and "paper.pdf" in page
