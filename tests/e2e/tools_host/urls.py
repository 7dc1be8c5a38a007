"""The URLconf of tests.e2e.tools_host.settings: the site's, plus the host page and its two classic scripts."""
from __future__ import annotations

import re
from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

from config.urls import urlpatterns as site_urlpatterns

DOCS = Path(__file__).resolve().parents[3] / "docs" / "tray.md"
EXAMPLE = re.compile(r"<!-- example: frontend-tools -->\s*```js\n(.*?)```", re.S)

PAGE = """{% load chat_tags %}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tools host</title><link rel="icon" href="data:,">
{% chat_tray_head page="home" %}</head>
<body><main id="main"><h1>A host page</h1><p id="words">Nothing here but tools.</p></main>
{% chat_tray page="home" %}
<script defer src="/tools-host/example.js" nonce="{{ csp_nonce }}"></script>
<script defer src="/tools-host/faults.js" nonce="{{ csp_nonce }}"></script>
</body></html>"""

# The fault tests' tools (a classic script too): one that throws, one that never answers, one that answers after
# window.__slowMs (navigate away meanwhile) or until window.__release() when window.__hold is set, one that asks for approval first, and each counts its runs in window.__runs (a second tab must run none).
FAULTS = """(function () {
  var pagechat = window.pagechat;
  window.__runs = {};
  function count(name) { window.__runs[name] = (window.__runs[name] || 0) + 1; }
  pagechat.registerTool({
    name: "break_wheel", title: "Break wheel", description: "Break the colour wheel (it always fails).",
    handler: function () { count("break_wheel"); throw new Error("the colour wheel is stuck"); },
  });
  pagechat.registerTool({
    name: "wait_forever", title: "Wait forever", description: "Wait for something that never comes.",
    handler: function () { count("wait_forever"); return new Promise(function () {}); },
  });
  pagechat.registerTool({
    name: "paint_wall", title: "Paint wall", description: "Paint the wall (asks the person first).", requiresApproval: true,
    handler: function () { count("paint_wall"); return "The wall is painted."; },
  });
  pagechat.registerTool({
    name: "count_sheep", title: "Count sheep", description: "Count sheep for a while, then say how many.",
    handler: function () {
      count("count_sheep");
      return new Promise(function (resolve) {
        var done = function () { resolve("Counted 42 sheep."); };
        if (window.__hold) { window.__release = done; } else { setTimeout(done, window.__slowMs || 0); }  // held: until the test lets go
      });
    },
  });
})();
"""


def example_script() -> str:
    """docs/tray.md's example, as the docs show it."""
    found = EXAMPLE.search(DOCS.read_text(encoding="utf-8"))
    if found is None:
        raise RuntimeError("docs/tray.md has no '<!-- example: frontend-tools -->' js block")
    return found.group(1)


@login_required
def host_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(engines["django"].from_string(PAGE).render({}, request))


def example_js(request: HttpRequest) -> HttpResponse:
    return HttpResponse(example_script(), content_type="text/javascript")


def faults_js(request: HttpRequest) -> HttpResponse:
    return HttpResponse(FAULTS, content_type="text/javascript")


urlpatterns = [
    path("tools-host/", host_page),
    path("tools-host/example.js", example_js),
    path("tools-host/faults.js", faults_js),
    *site_urlpatterns,
]
