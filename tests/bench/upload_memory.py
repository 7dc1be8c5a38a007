"""Peak memory of image uploads, read from outside a real server process: hostile PNGs (150 KB files that decode to
hundreds of MB) and legitimate images at the decode budget (one of them a file of nearly the
largest size), all sent at once through `POST /api/attachments/`.

    python -m tests.bench.upload_memory [--server uvicorn|daphne] [--hostile 4] [--legit 6]

Starts the server as deployed (DEBUG off, MALLOC_ARENA_MAX=2 as docs/deployment.md sets, one process) on a fresh
SQLite database in a temporary directory (removed after), uploads one small image to warm it up, resets the
process's peak RSS (`/proc/<pid>/clear_refs`), sends the uploads concurrently and prints JSON: each upload's status,
the server's RSS before, its peak (VmHWM) after, the growth, and the documented bound (CHAT_MAX_IMAGE_DECODE_BYTES + 8 x CHAT_MAX_ATTACHMENT_BYTES, see
docs/hardening.md). tests/chat/test_attachments_limits.py runs `measure` against a real uvicorn and checks the bound.
"""
from __future__ import annotations

import argparse
import functools
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PIL import ExifTags, Image

from tests.bench.server import ROOT, Server

MiB = 1024 * 1024


def setting_default(name: str) -> int:
    """A chat setting's value for the server: the environment's, else chat/conf.py's default."""
    if name in os.environ:
        return int(os.environ[name])
    from chat.conf import ChatSettings

    return int(ChatSettings.specs()[name].default)


def memory_bound(decode_bytes: int, attachment_bytes: int) -> int:
    """The documented peak growth of a process reading uploads (docs/hardening.md): one decode at a time, and a few
    copies of files (the one being read, the image without its metadata, the one before it still being stored)."""
    return decode_bytes + 8 * attachment_bytes


@functools.cache
def hostile_png() -> bytes:
    """6000 x 6000 RGBA in one colour: 150 KB of PNG, 144 MB decoded (under MAX_IMAGE_PIXELS, 40 megapixels)."""
    out = io.BytesIO()
    Image.new("RGBA", (6000, 6000), (10, 20, 30, 255)).save(out, format="PNG")
    return out.getvalue()


@functools.cache
def legitimate_images(decode_bytes: int, attachment_bytes: int) -> list[tuple[str, bytes, str]]:
    """The largest images the budget takes (8 bytes a colour pixel): a PNG with alpha, a phone photo (JPEG with
    EXIF orientation 6: turned upright, the costliest path), and the same as a grainy photo of nearly the largest file."""
    side = math.isqrt(decode_bytes // 8)
    ramp = Image.linear_gradient("L").resize((side, side))
    flipped = ramp.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    png = io.BytesIO()
    Image.merge("RGBA", (ramp, flipped, ramp.transpose(Image.Transpose.FLIP_TOP_BOTTOM), Image.new("L", (side, side), 255))).save(png, format="PNG")
    exif = Image.Exif()
    exif[ExifTags.Base.Make], exif[ExifTags.Base.Orientation] = "Phone", 6
    grain = Image.effect_noise((side, side), 30)
    images = [("large.png", png.getvalue(), "image/png")]
    for name, photo in (("portrait.jpg", Image.merge("RGB", (ramp, flipped, ramp))), ("grainy.jpg", Image.merge("RGB", (Image.blend(ramp, grain, 0.5), grain, ramp)))):
        for quality in (85, 70, 55, 40, 25, 10):
            jpeg = io.BytesIO()
            photo.save(jpeg, format="JPEG", quality=quality, exif=exif)
            if jpeg.tell() <= attachment_bytes - 64 * 1024:
                break
        images.append((name, jpeg.getvalue(), "image/jpeg"))
    return images


def small_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def upload(port: int, token: str, name: str, data: bytes, content_type: str, timeout: float = 60) -> tuple[int, dict[str, Any]]:
    """POST one file as multipart field `file`; the status and the JSON body."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: {content_type}\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/attachments/", data=body, method="POST", headers={
        "Authorization": f"Token {token}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def proc_status(pid: int, key: str) -> int:
    """A size from /proc/<pid>/status (VmRSS, VmHWM) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def peak_reset(pid: int) -> bool:
    """Set the process's peak RSS (VmHWM) to its current RSS (Linux: `5` to /proc/<pid>/clear_refs)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def measure(port: int, pid: int, token: str, *, hostile: int = 4, legit: int = 6, decode_bytes: int | None = None,
            attachment_bytes: int | None = None) -> dict[str, Any]:
    """Warm the server up, then send `hostile` hostile PNGs and `legit` budget-sized images at once; the figures."""
    decode_bytes = decode_bytes or setting_default("CHAT_MAX_IMAGE_DECODE_BYTES")
    attachment_bytes = attachment_bytes or setting_default("CHAT_MAX_ATTACHMENT_BYTES")
    status, body = upload(port, token, "warm-up.png", small_png(), "image/png")
    assert status == 201, (status, body)
    files = [("hostile.png", hostile_png(), "image/png")] * hostile
    pool = legitimate_images(decode_bytes, attachment_bytes)
    files += [pool[i % len(pool)] for i in range(legit)]
    time.sleep(0.5)
    reset = peak_reset(pid)
    before = proc_status(pid, "VmRSS") if reset else proc_status(pid, "VmHWM")
    started = time.monotonic()
    with ThreadPoolExecutor(len(files)) as executor:
        answers = list(executor.map(lambda f: upload(port, token, *f), files))
    seconds = time.monotonic() - started
    peak = proc_status(pid, "VmHWM")
    results = [{"file": name, "bytes": len(data), "status": status, "code": body.get("code"), "width": body.get("width"),
                "thumbnail": bool(body.get("thumbnail_url"))} for (name, data, _), (status, body) in zip(files, answers, strict=True)]
    bound = memory_bound(decode_bytes, attachment_bytes)
    return {"uploads": results, "seconds": round(seconds, 2), "peak_reset": reset, "rss_before_mib": round(before / MiB, 1),
            "peak_after_mib": round(peak / MiB, 1), "growth_mib": round((peak - before) / MiB, 1), "bound_mib": round(bound / MiB, 1),
            "within_bound": peak - before <= bound}


def server_env(tmp: Path) -> dict[str, str]:
    """Production settings on a database of its own (as tests/test_servers.py starts them)."""
    return {"DEBUG": "0", "SECRET_KEY": "upload-memory-" + "k" * 40, "ALLOWED_HOSTS": "127.0.0.1", "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
            "REDIS_URL": "", "MEDIA_ROOT": str(tmp / "media"), "CHAT_PROVIDER": "offline", "MALLOC_ARENA_MAX": "2"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=["uvicorn", "daphne"], default="uvicorn")
    parser.add_argument("--hostile", type=int, default=4)
    parser.add_argument("--legit", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pagechat-upload-memory-") as name:
        tmp = Path(name)
        env = server_env(tmp)
        run_env = {**os.environ, **env}
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=run_env, check=True, timeout=300)
        out = subprocess.run([sys.executable, "-m", "tests.bench.dbsetup", "users", "1"], cwd=ROOT, env=run_env, check=True, timeout=120,
                             capture_output=True, text=True).stdout
        token = json.loads(out.splitlines()[-1])["tokens"][0]
        server = Server(args.server, "config.asgi:application", env, tmp / "logs", server=args.server).start()
        try:
            figures = measure(server.port, server.pid, token, hostile=args.hostile, legit=args.legit)
        finally:
            server.stop()
    print(json.dumps({"server": args.server, **figures}))


if __name__ == "__main__":
    main()
