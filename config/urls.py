"""Root URLs of this repo's site: admin, sign-in, the chat API (under /api/) and the demo pages."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("chat.urls")),
    path("", include("chat.ops.urls")),  # /healthz, /readyz, /metrics
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    # Django's LogoutView accepts POST only (CSRF-protected); the header renders a small form for it.
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the demo's language switcher posts here
    path("", include("pages.demo.urls")),
]
