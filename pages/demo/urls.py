"""URLs of the demo site (included at the root by config.urls; the namespace stays `pages` so links keep working)."""
from django.urls import path

from pages.demo import views

app_name = "pages"

urlpatterns = [
    path("", views.home, name="home"),
    path("research-streams/", views.streams_list, name="streams_list"),
    path("research-streams/new/", views.new_stream, name="new_stream"),
    path("research-streams/<int:stream_id>/", views.stream_edit, name="stream_edit"),
    path("reports/", views.reports_list, name="reports_list"),
    path("reports/<int:report_id>/", views.report_detail, name="report_detail"),
    path("articles/<str:external_id>/", views.article_detail, name="article_detail"),
]
