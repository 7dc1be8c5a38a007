"""Chat API routes: SSE, run control and REST."""
from django.urls import include, path
from rest_framework.routers import SimpleRouter

from chat import views

router = SimpleRouter()
router.register("conversations", views.ConversationViewSet, basename="conversation")

urlpatterns = [
    path("chat", views.ChatView.as_view(), name="chat"),
    path("chat/stream", views.chat_stream, name="chat-stream"),
    path("chat/runs/<str:run_id>/events", views.run_events, name="run-events"),
    path("chat/runs/<str:run_id>/cancel", views.run_cancel, name="run-cancel"),
    path("chat/runs/<str:run_id>/approve", views.run_approve, name="run-approve"),
    path("", include(router.urls)),
]
