"""The chat API (SSE, run control, REST) and the websocket's address; include it under any prefix."""
from django.urls import include, path
from rest_framework.routers import SimpleRouter

from chat import openapi, views
from chat.interop import views as interop

app_name = "pagechat"

router = SimpleRouter()
router.register("conversations", views.ConversationViewSet, basename="conversation")
router.register("messages", views.MessageViewSet, basename="message")

urlpatterns = [
    path("", views.api_root, name="root"),
    # The websocket is served by chat.asgi.websocket_application() at this same path; plain HTTP gets 426.
    path("ws/", views.websocket_info, name="websocket"),
    # the tray's translations (Django's JavaScript catalog), for the language the tray tag names in ?lang=
    path("i18n.js", views.TrayCatalog.as_view(), name="jsi18n"),
    path("chat", views.ChatView.as_view(), name="chat"),
    path("chat/stream", views.chat_stream, name="chat-stream"),
    path("chat/runs/<str:run_id>/events", views.run_events, name="run-events"),
    path("chat/runs/<str:run_id>/cancel", views.run_cancel, name="run-cancel"),
    path("chat/runs/<str:run_id>/approve", views.run_approve, name="run-approve"),
    path("chat/ag-ui", interop.agui_run, name="ag-ui"),
    path("chat/ai-sdk", interop.aisdk_chat, name="ai-sdk"),
    path("chat/ai-sdk/<str:chat_id>/stream", interop.aisdk_resume, name="ai-sdk-resume"),
    path("attachments/", views.AttachmentUploadView.as_view(), name="attachment-upload"),
    path("attachments/<str:attachment_id>/", views.AttachmentFileView.as_view(), name="attachment-file"),
    path("attachments/<str:attachment_id>/thumbnail/", views.AttachmentThumbnailView.as_view(), name="attachment-thumbnail"),
    path("preferences/", views.PreferencesView.as_view(), name="preferences"),
    path("", include(router.urls)),
    # the API described (OpenAPI 3.1): the document for programs, Swagger UI for staff
    path("schema/", openapi.SchemaView.as_view(), name="schema"),
    path("docs/", openapi.DocsView.as_view(), name="docs"),
]
