"""The URLconf of tests.chat.mounted_host: only the chat API, at /assistant/."""
from django.urls import include, path

urlpatterns = [path("assistant/", include("chat.urls"))]
