"""The chat API (SSE, run control, REST) and the websocket's address; include it under any prefix."""
from django.urls import include, path
from rest_framework.routers import SimpleRouter

from chat.api import attachments, conversations, i18n, openapi, preferences, root, runs, stream, turn
from chat.api.interop import views as interop

app_name = "pagechat"

router = SimpleRouter()
router.register("conversations", conversations.ConversationViewSet, basename="conversation")
router.register("messages", conversations.MessageViewSet, basename="message")

urlpatterns = [
    path("", root.api_root, name="root"),
    # The websocket is served by chat.asgi.websocket_application() at this same path; plain HTTP gets 426.
    path("ws/", root.websocket_info, name="websocket"),
    # the tray's translations (Django's JavaScript catalog), for the language the tray tag names in ?lang=
    path("i18n.js", i18n.TrayCatalog.as_view(), name="jsi18n"),
    path("chat", turn.ChatView.as_view(), name="chat"),
    path("chat/stream", stream.chat_stream, name="chat-stream"),
    path("chat/runs/<str:run_id>/events", stream.run_events, name="run-events"),
    path("chat/runs/<str:run_id>/cancel", runs.run_cancel, name="run-cancel"),
    path("chat/runs/<str:run_id>/approve", runs.run_approve, name="run-approve"),
    path("chat/runs/<str:run_id>/tool_result", runs.run_tool_result, name="run-tool-result"),
    path("chat/ag-ui", interop.agui_run, name="ag-ui"),
    path("chat/ai-sdk", interop.aisdk_chat, name="ai-sdk"),
    path("chat/ai-sdk/<str:chat_id>/stream", interop.aisdk_resume, name="ai-sdk-resume"),
    path("attachments/", attachments.AttachmentUploadView.as_view(), name="attachment-upload"),
    path("attachments/<str:attachment_id>/", attachments.AttachmentFileView.as_view(), name="attachment-file"),
    path("attachments/<str:attachment_id>/thumbnail/", attachments.AttachmentThumbnailView.as_view(), name="attachment-thumbnail"),
    path("preferences/", preferences.PreferencesView.as_view(), name="preferences"),
    path("", include(router.urls)),
    # the API described (OpenAPI 3.1): the document for programs, Swagger UI for staff
    path("schema/", openapi.SchemaView.as_view(), name="schema"),
    path("docs/", openapi.DocsView.as_view(), name="docs"),
]
