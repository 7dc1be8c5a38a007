"""Pages app: registers every page file under pages/site/ and any app's `chat_pages` module."""
import importlib
import pkgutil

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PagesConfig(AppConfig):
    name = "pages"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        from pages import checks  # noqa: F401  (registers system checks)
        import pages.site

        # one file per page: importing it registers its PageSpec (and its tools/payloads)
        for info in pkgutil.iter_modules(pages.site.__path__):
            importlib.import_module(f"pages.site.{info.name}")
        autodiscover_modules("chat_pages")
        post_migrate.connect(_sync, sender=self)


def _sync(**kwargs: object) -> None:
    from pages.models import chat_page_rows_sync

    chat_page_rows_sync()
