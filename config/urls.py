"""Root URLs: admin, the chat API (SSE + REST) and the demo site."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("chat.urls")),
    path("", include("pages.site.urls")),
]
