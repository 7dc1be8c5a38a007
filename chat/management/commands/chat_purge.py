"""`manage.py chat_purge --days N [--dry-run]`: remove conversations whose last activity is older than N days."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.conf import chat_settings
from chat.userdata.attachments import attachments_unsent_purge
from chat.userdata.retention import PURGE_BATCH_SIZE, Removal, conversations_purge, purge_cutoff


class Command(BaseCommand):
    help = ("Remove conversations whose last activity is strictly older than now minus N days, with their messages, runs, "
            "tool calls, feedback, attachment files and run logs, in batches. Default N: CHAT_RETENTION_DAYS. Also removes "
            "attachments uploaded but never sent, older than CHAT_UNSENT_ATTACHMENT_HOURS.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=float, default=None,
                            help="keep conversations active in the last N days (N may be 0 or fractional); default CHAT_RETENTION_DAYS")
        parser.add_argument("--dry-run", action="store_true", help="change nothing; print what would be removed")
        parser.add_argument("--batch-size", type=int, default=PURGE_BATCH_SIZE, help=f"conversations per transaction (default {PURGE_BATCH_SIZE})")

    def handle(self, *args: Any, days: float | None, dry_run: bool, batch_size: int, **options: Any) -> None:
        if days is None:
            days = chat_settings.CHAT_RETENTION_DAYS
            if days is None:
                self.stdout.write("CHAT_RETENTION_DAYS is not set (conversations are kept forever) and no --days was given: nothing to do.")
                return
        if days < 0:
            raise CommandError("--days must not be negative")
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        verb = "Would remove" if dry_run else "Removed"
        cutoff = purge_cutoff(days=days)
        self.stdout.write(f"{'Dry run: ' if dry_run else ''}conversations last active before {cutoff.isoformat()} ({days:g} days ago).")

        def batch(removal: Removal) -> None:
            self.stdout.write(f"  {verb} {removal.describe()}")

        total = conversations_purge(days=days, dry_run=dry_run, batch_size=batch_size, on_batch=batch)
        style = self.style.WARNING if dry_run else self.style.SUCCESS
        self.stdout.write(style(f"{verb} {total.describe()} in total."))
        # uploads never sent with a message: nobody can see them, so they go after CHAT_UNSENT_ATTACHMENT_HOURS
        unsent = attachments_unsent_purge(hours=chat_settings.CHAT_UNSENT_ATTACHMENT_HOURS, dry_run=dry_run)
        self.stdout.write(f"{verb} {len(unsent)} file(s) of attachments never sent "
                          f"(older than {chat_settings.CHAT_UNSENT_ATTACHMENT_HOURS:g} hours).")
