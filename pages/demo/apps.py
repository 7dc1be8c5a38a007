"""The demo app: its domain models, corpus, pages, tools and payload types (discovered from `assistant.py`)."""
from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "pages.demo"
    label = "pagechat_demo"
    verbose_name = "pagechat demo site"
    default_auto_field = "django.db.models.BigAutoField"
