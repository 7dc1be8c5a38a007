"""Operations URLs: include at the site's root (`path("", include("chat.ops.urls"))`): /healthz, /readyz, /metrics."""
from django.urls import path

from chat.ops import views as ops

urlpatterns = [
    path("healthz", ops.healthz, name="chat-healthz"),
    path("readyz", ops.readyz, name="chat-readyz"),
    path("metrics", ops.metrics, name="chat-metrics"),
]
