"""Pages app (label `pagechat_pages`): imports every installed app's `assistant` module, checks, the page mirror."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate

DISCOVERY_MODULE = "assistant"


class PagesConfig(AppConfig):
    name = "pages"
    label = "pagechat_pages"
    verbose_name = "pagechat pages"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        from pages import checks  # noqa: F401  (registers system checks)

        # One discovery module per app: `<app>/assistant.py` registers its tools, payload types and pages.
        autodiscover_modules(DISCOVERY_MODULE)
        post_migrate.connect(_sync, sender=self)
        _clear_staff_settings_on_change()


def _clear_staff_settings_on_change() -> None:
    """A page's row or its groups changed in this process: the cached restrictions go at once."""
    from django.db.models.signals import m2m_changed, post_delete, post_save

    from chat import staff_settings
    from pages.models import ChatPage

    post_save.connect(staff_settings.clear, sender=ChatPage, dispatch_uid="pagechat-staff-save-ChatPage")
    post_delete.connect(staff_settings.clear, sender=ChatPage, dispatch_uid="pagechat-staff-delete-ChatPage")
    m2m_changed.connect(staff_settings.clear, sender=ChatPage.groups.through, dispatch_uid="pagechat-staff-m2m-ChatPage")


def _sync(**kwargs: object) -> None:
    from pages.models import chat_page_rows_sync

    chat_page_rows_sync()
