"""chat.infra.db_threads: a job runs in the caller's active language (a turn's plan - the page's title, its context builder -
is made in the user's language, not the site's default)."""
from __future__ import annotations

from django.utils import translation
from django.utils.translation import gettext

from chat.infra.db_threads import DbThread


def _said() -> tuple[str | None, str]:
    return translation.get_language(), gettext("Close")


async def test_a_job_runs_in_the_language_active_where_it_was_submitted() -> None:
    thread = DbThread("test-language")
    with translation.override("de"):
        assert await thread.run(_said)() == ("de", "Schließen")
    with translation.override("fr"):
        assert await thread.run(_said)() == ("fr", "Fermer")
    with translation.override("en"):
        assert await thread.run(_said)() == ("en", "Close")
