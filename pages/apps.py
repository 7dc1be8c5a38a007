"""Pages app (label `pagechat_pages`): system checks, where pages use tools and payload types, the page mirror."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PagesConfig(AppConfig):
    name = "pages"
    label = "pagechat_pages"
    verbose_name = "pagechat pages"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat.infra.places import places_set
        from chat.infra.registration import discover
        from pages import checks  # noqa: F401  (registers system checks)
        from pages.registry import registry

        discover(self.name)  # every app's `assistant` module, once the tools and payloads apps have their built-ins
        places_set(registry)  # tools' and payloads' admin pages show where pages use them
        post_migrate.connect(_sync, sender=self)
        _clear_staff_settings_on_change()


def _clear_staff_settings_on_change() -> None:
    """A page's row or its groups changed in this process: the cached restrictions go at once."""
    from chat.infra.staff_settings import clear_on_change
    from pages.models import ChatPage

    clear_on_change(ChatPage, m2m=(ChatPage.groups.through,))


def _sync(**kwargs: object) -> None:
    from pages.models import chat_page_rows_sync

    chat_page_rows_sync()
