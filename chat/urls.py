"""The chat API (SSE, run control, REST) and the websocket's address; include it under any prefix."""
from django.urls import include, path
from rest_framework.routers import SimpleRouter

from chat import views

app_name = "pagechat"

router = SimpleRouter()
router.register("conversations", views.ConversationViewSet, basename="conversation")

urlpatterns = [
    path("", views.api_root, name="root"),
    # The websocket is served by chat.asgi.websocket_application() at this same path; plain HTTP gets 426.
    path("ws/", views.websocket_info, name="websocket"),
    path("chat", views.ChatView.as_view(), name="chat"),
    path("chat/stream", views.chat_stream, name="chat-stream"),
    path("chat/runs/<str:run_id>/events", views.run_events, name="run-events"),
    path("chat/runs/<str:run_id>/cancel", views.run_cancel, name="run-cancel"),
    path("chat/runs/<str:run_id>/approve", views.run_approve, name="run-approve"),
    path("", include(router.urls)),
]
