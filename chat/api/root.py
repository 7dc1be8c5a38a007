"""The API's root (where the endpoints are) and the websocket's address answered over plain HTTP."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from chat.api.errors import error
from chat.api.openapi import described


@described(methods=["GET"], authenticated=False, summary="Where the endpoints are", tags=["api"], responses={200: inline_serializer(
    "ApiRoot", {"protocol": serializers.IntegerField(), "websocket": serializers.CharField(), "chat": serializers.CharField(),
                "chat_stream": serializers.CharField(), "ag_ui": serializers.CharField(), "ai_sdk": serializers.CharField(),
                "conversations": serializers.CharField(), "preferences": serializers.CharField()})})
@csrf_exempt  # reads nothing; any other method is a 405, not a CSRF page
@require_GET
async def api_root(request: HttpRequest) -> HttpResponse:
    """GET <api>/: where the endpoints are (for programs; the tray gets the same from its config)."""
    return JsonResponse({
        "protocol": 1,
        "websocket": reverse("pagechat:websocket"),
        "chat": reverse("pagechat:chat"),
        "chat_stream": reverse("pagechat:chat-stream"),
        "ag_ui": reverse("pagechat:ag-ui"),
        "ai_sdk": reverse("pagechat:ai-sdk"),
        "conversations": reverse("pagechat:conversation-list"),
        "preferences": reverse("pagechat:preferences"),
    })


async def websocket_info(request: HttpRequest) -> HttpResponse:
    """<api>/ws/ over plain HTTP: the websocket lives here; answer 426 Upgrade Required."""
    response = error("bad_frame", "this address takes a websocket connection")
    response.status_code = 426
    response["Upgrade"] = "websocket"
    return response
