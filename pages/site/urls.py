"""URLs of the demo site (included at the root by config.urls under the `pages` namespace)."""
from django.contrib.auth import views as auth_views
from django.urls import path

from pages.site import views

app_name = "pages"

urlpatterns = [
    path("", views.home, name="home"),
    path("research-streams/", views.streams_list, name="streams_list"),
    path("research-streams/new/", views.new_stream, name="new_stream"),
    path("research-streams/<int:stream_id>/", views.stream_edit, name="stream_edit"),
    path("reports/", views.reports_list, name="reports_list"),
    path("reports/<int:report_id>/", views.report_detail, name="report_detail"),
    path("articles/<str:external_id>/", views.article_detail, name="article_detail"),
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="registration/login.html", redirect_authenticated_user=True),
        name="login",
    ),
    # Django's LogoutView accepts POST only (CSRF-protected); the header renders a small form for it.
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
