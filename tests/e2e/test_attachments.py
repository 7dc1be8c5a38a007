"""Attachments in a real browser against the live demo: an image and a PDF attached with the paperclip, sent, shown
in the turn, kept after a reload, refused when they are not what they claim, and out of another user's reach."""
from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator

import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, expect

from tests.chat.test_attachments import pdf_bytes

from .conftest import LiveServer, screenshot, watched_page
from .test_live_site import WIDE, assert_clean, final_messages, login, open_tray, send, wait_idle

pytestmark = pytest.mark.e2e


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (120, 80), (220, 40, 40)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def attach_server(start_live_server: Callable[..., LiveServer], tmp_path_factory: pytest.TempPathFactory) -> LiveServer:
    """The demo site (offline model) storing uploads in a folder of its own."""
    return start_live_server("attach", MEDIA_ROOT=str(tmp_path_factory.mktemp("attach_media")))


@pytest.fixture
def pages(chromium: Browser) -> Iterator[Callable[..., Page]]:
    contexts = []

    def make(server: LiveServer, username: str = "demo") -> Page:
        context = chromium.new_context(viewport=WIDE, storage_state=login(chromium, server, username))
        contexts.append(context)
        page = watched_page(context)
        page.goto(server.url + "/")
        return page

    yield make
    for context in contexts:
        context.close()


def image_loaded(page: Page, selector: str) -> bool:
    return bool(page.eval_on_selector(selector, "img => img.complete && img.naturalWidth > 0"))


def test_attach_an_image_and_a_pdf_send_reload_and_keep_them_private(attach_server: LiveServer, pages: Callable[..., Page]) -> None:
    page = pages(attach_server)
    open_tray(page)
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach file").click()
    chooser.value.set_files([
        {"name": "red-square.png", "mimeType": "image/png", "buffer": png_bytes()},
        {"name": "findings.pdf", "mimeType": "application/pdf", "buffer": pdf_bytes("Findings")},
    ])
    chips = page.locator(".chat-pending__item")
    expect(chips).to_have_count(2)
    expect(page.locator(".chat-pending__item.is-uploading")).to_have_count(0)  # both uploaded
    expect(chips.nth(0)).to_contain_text("red-square.png")
    expect(chips.nth(1)).to_contain_text("findings.pdf")
    expect(page.get_by_role("button", name="Remove findings.pdf")).to_be_visible()

    send(page, "What do these files show?")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    expect(page.locator(".chat-pending__item")).to_have_count(0)  # they went with the message
    question = page.locator(".chat-msg--user").last
    expect(question.locator(".chat-attachment")).to_have_count(2)
    expect(question.get_by_role("img", name="red-square.png")).to_be_visible()
    expect(question.locator(".chat-attachment__name")).to_have_text("findings.pdf")
    assert image_loaded(page, ".chat-msg--user .chat-attachment__thumb")
    # the offline model cannot read them, and says so, naming them
    answer = final_messages(page).last
    expect(answer).to_contain_text("cannot open attachments")
    expect(answer).to_contain_text("red-square.png")
    expect(answer).to_contain_text("findings.pdf")
    stored = attach_server.query(
        "SELECT a.name, a.content_type FROM pagechat_attachment a JOIN pagechat_message m ON a.message_id = m.id "
        "WHERE m.role = 'user' ORDER BY a.position")
    assert stored == [("red-square.png", "image/png"), ("findings.pdf", "application/pdf")]
    screenshot(page, "attachments_sent")

    image_url = question.locator("a.chat-attachment__link").nth(0).get_attribute("href")
    pdf_url = question.locator("a.chat-attachment__link").nth(1).get_attribute("href")
    thumb_url = question.locator("img.chat-attachment__thumb").get_attribute("src")
    assert image_url and pdf_url and thumb_url and re.match(r"^/api/attachments/[0-9a-f-]{36}/$", image_url)

    # a reload keeps them: the conversation comes back over REST with its attachments
    page.reload()
    expect(page.locator(".chat-tray")).to_be_visible()  # the tray reopens where it was (sessionStorage)
    question = page.locator(".chat-msg--user").last
    expect(question.locator(".chat-attachment")).to_have_count(2)
    expect(question.get_by_role("img", name="red-square.png")).to_be_visible()
    expect(question.locator(".chat-attachment__name")).to_have_text("findings.pdf")
    assert image_loaded(page, ".chat-msg--user .chat-attachment__thumb")
    owner = page.request.get(attach_server.url + image_url)
    assert owner.status == 200 and owner.headers["content-type"] == "image/png" and owner.body() == png_bytes()
    assert page.request.get(attach_server.url + pdf_url).status == 200
    assert_clean(page)

    # another signed-in user gets exactly the 404 of an id that does not exist
    other = pages(attach_server, "alice")
    for url in (image_url, pdf_url, thumb_url):
        refused = other.request.get(attach_server.url + url)
        assert refused.status == 404 and refused.json()["code"] == "not_found"
    missing = other.request.get(attach_server.url + "/api/attachments/00000000-0000-0000-0000-000000000000/")
    assert missing.status == 404 and missing.body() == other.request.get(attach_server.url + image_url).body()


def test_an_uploaded_file_and_the_text_not_sent_yet_survive_a_navigation(attach_server: LiveServer, pages: Callable[..., Page]) -> None:
    page = pages(attach_server)
    open_tray(page)
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach file").click()
    chooser.value.set_files([{"name": "draft-chart.png", "mimeType": "image/png", "buffer": png_bytes()}])
    expect(page.locator(".chat-pending__item")).to_have_count(1)
    expect(page.locator(".chat-pending__item.is-uploading")).to_have_count(0)
    page.get_by_label("Message").fill("What does this chart")
    page.goto(attach_server.url + "/reports/")  # the user follows a link before sending
    expect(page.locator(".chat-tray")).to_be_visible()
    chip = page.locator(".chat-pending__item")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("draft-chart.png")
    assert image_loaded(page, ".chat-pending__thumb")  # the server's thumbnail: the local preview did not survive
    box = page.get_by_label("Message")
    expect(box).to_have_value("What does this chart")
    box.press("End")
    box.type(" show?")
    box.press("Enter")
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    question = page.locator(".chat-msg--user").last
    expect(question).to_contain_text("What does this chart show?")
    expect(question.get_by_role("img", name="draft-chart.png")).to_be_visible()
    stored = attach_server.query(
        "SELECT a.name FROM pagechat_attachment a JOIN pagechat_message m ON a.message_id = m.id WHERE m.content = ?",
        "What does this chart show?")
    assert stored == [("draft-chart.png",)]
    page.reload()
    expect(page.locator(".chat-tray")).to_be_visible()
    expect(page.locator(".chat-pending__item")).to_have_count(0)  # sent: the draft is empty
    expect(page.get_by_label("Message")).to_have_value("")
    assert_clean(page)


def test_drop_paste_remove_and_refusals(attach_server: LiveServer, pages: Callable[..., Page]) -> None:
    page = pages(attach_server)
    open_tray(page)
    png = list(png_bytes())
    # dropped on the tray
    page.evaluate("""(bytes) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], "dropped.png", {type: "image/png"}));
        document.querySelector(".chat-tray").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
    }""", png)
    expect(page.locator(".chat-pending__item")).to_have_count(1)
    expect(page.locator(".chat-pending__item.is-uploading")).to_have_count(0)
    # pasted into the message box
    page.evaluate("""(bytes) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], "pasted.png", {type: "image/png"}));
        document.querySelector(".chat-input").dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true}));
    }""", png)
    expect(page.locator(".chat-pending__item")).to_have_count(2)
    expect(page.locator(".chat-pending__item.is-uploading")).to_have_count(0)
    # removed before sending: gone from the composer and from the server
    page.get_by_role("button", name="Remove dropped.png").click()
    expect(page.locator(".chat-pending__item")).to_have_count(1)
    expect(page.locator(".chat-pending__item")).to_contain_text("pasted.png")
    attach_server.wait_for_row("SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM pagechat_attachment WHERE name = 'dropped.png')")

    # a page that calls itself a PNG: the server reads the bytes and refuses it, and the tray says why
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach file").click()
    chooser.value.set_files([{"name": "fake.png", "mimeType": "image/png", "buffer": b"<html><script>alert(1)</script></html>"}])
    expect(page.locator(".chat-notice")).to_contain_text("fake.png: Only images (PNG, JPEG, WebP, GIF) and PDF files can be attached.")
    # a type the tray does not take is refused before any upload
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach file").click()
    chooser.value.set_files([{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"hello"}])
    expect(page.locator(".chat-notice")).to_contain_text("notes.txt: only images (PNG, JPEG, WebP, GIF) and PDF files can be attached.")
    expect(page.locator(".chat-pending__item")).to_have_count(1)
    assert attach_server.query("SELECT count(*) FROM pagechat_attachment WHERE name IN ('fake.png', 'notes.txt')") == [(0,)]

    # a file without words is a message too
    page.get_by_role("button", name="Send", exact=True).click()
    expect(final_messages(page)).to_have_count(1)
    wait_idle(page)
    expect(page.locator(".chat-msg--user").last.get_by_role("img", name="pasted.png")).to_be_visible()
    assert page.evaluate("window.__csp") == []
    # the browser logs the refused upload's 415 itself; nothing else went wrong
    assert [e for e in page.errors if "415" not in e] == [] and len(page.errors) == 1  # type: ignore[attr-defined]
