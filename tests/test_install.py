"""`pip install pagechat` into a fresh virtualenv, resolved by pip itself (no constraints file, no cache of ours).

Twice: with the pip that `python -m venv` brings (Python 3.12's bundled pip, what a host's new venv has) and with
the newest pip. Each installs the built wheel with the `otel` extra, and the bundled pip also installs it bare; the
installed apps then import and set up Django, and tracing degrades to "no export" without the extra. Dependencies
come from the package index the machine reaches, as a host's install would.
"""
from __future__ import annotations

import ensurepip
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("chat", "tools", "payloads", "pages")

# Django set up with the four apps, then tracing asked to export (an endpoint nobody listens on: nothing is sent
# before a span ends, and none does here); prints whether the exporter was installed.
PROBE = """
import logging, os, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(levelname)s %(message)s")
import django
from django.conf import settings
settings.configure(INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "channels", "rest_framework",
                                   "rest_framework.authtoken", "chat", "tools", "payloads", "pages"],
                   DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}})
os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"
django.setup()
import chat, chat.infra.tracing
print("installed-at", os.path.dirname(chat.__file__))
print("tracing", chat.infra.tracing.configure())
"""


def run(cmd: list[str], cwd: Path, timeout: float = 600) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "DJANGO_SETTINGS", "PYTHONPATH", "OTEL_"))}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources (the build leaves nothing in the checkout)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "node_modules", "var", "*.sqlite3*", "__pycache__", "artifacts", "build", "dist"))
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(src)], tmp)
    return next((tmp / "dist").glob("pagechat-*.whl"))


def test_the_wheel_holds_the_four_apps_and_no_demo(wheel: Path) -> None:
    """The four apps with their templates, static files, catalogs and migrations; the demo site stays in the checkout."""
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == set(PACKAGES), tops
    for package in PACKAGES:
        assert f"{package}/__init__.py" in names and f"{package}/apps.py" in names, package
    assert "chat/providers/offline/__init__.py" in names and "pages/migrations/0001_initial.py" in names
    assert any(name.startswith("chat/static/chat/") for name in names) and any(name.startswith("chat/locale/") for name in names)
    assert [name for name in names if name.startswith("pages/demo/")] == []


def venv_with(tmp: Path, *, newest_pip: bool) -> Path:
    """A new virtualenv made by `python -m venv`; its pip upgraded to the newest only when asked."""
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp)
    pip = venv / "bin" / "pip"
    version = run([str(pip), "--version"], tmp).split()[1]
    if newest_pip:
        run([str(pip), "install", "-q", "--upgrade", "pip"], tmp)
        assert run([str(pip), "--version"], tmp).split()[1] != ensurepip.version() or version != ensurepip.version()
    else:
        assert version == ensurepip.version(), (version, ensurepip.version())  # the bundled pip, as a host has it
    return venv


def install_and_probe(venv: Path, target: str, tmp: Path) -> str:
    pip = str(venv / "bin" / "pip")
    run([pip, "install", "-q", "--disable-pip-version-check", target], tmp, timeout=900)
    run([pip, "check"], tmp)
    return run([str(venv / "bin" / "python"), "-c", PROBE], tmp)


@pytest.mark.parametrize("newest_pip", [False, True], ids=["bundled-pip", "newest-pip"])
def test_the_wheel_with_otel_installs_and_exports(wheel: Path, tmp_path: Path, newest_pip: bool) -> None:
    venv = venv_with(tmp_path, newest_pip=newest_pip)
    out = install_and_probe(venv, f"{wheel}[otel]", tmp_path)
    assert f"installed-at {venv}" in out, out  # the installed package, not this checkout
    assert "tracing True" in out, out


def test_the_bare_wheel_installs_with_the_bundled_pip_and_serves_without_traces(wheel: Path, tmp_path: Path) -> None:
    venv = venv_with(tmp_path, newest_pip=False)
    out = install_and_probe(venv, str(wheel), tmp_path)
    assert "tracing False" in out, out
    assert "pagechat[otel]" in out, out  # the one warning says how to get traces
    listed = run([str(venv / "bin" / "pip"), "list", "--format=freeze"], tmp_path).lower()
    assert "opentelemetry-sdk" not in listed and "opentelemetry-instrumentation" not in listed, listed
