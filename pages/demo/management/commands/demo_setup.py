"""`manage.py demo_setup`: idempotently create the demo users, streams, a report and API tokens, then print how to log in."""
from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from rest_framework.authtoken.models import Token

from pages.demo.data import load_articles
from pages.demo.models import Article, Channel, Report, ResearchStream
from pages.demo.search import article_search
from pages.demo.sources import ARTICLES
from tools.mcp import McpRefresh, mcp_server_refresh
from tools.models import McpServer
from tools.sources.index import source_rebuild

# (username, password, is_staff, is_superuser). demo is staff (admin + diagnostics) but deliberately not a
# superuser, so the demo shows what a staff member sees; alice is a plain user to show per-user isolation.
USERS: list[tuple[str, str, bool, bool]] = [
    ("demo", "demo", True, False),
    ("admin", "admin", True, True),
    ("alice", "alice", False, False),
    ("viewer", "viewer", False, False),
]
DEMO_MODELS = ("researchstream", "channel", "report", "article")
# Which demo flows each user may use (docs/permissions.md): demo and alice all of them; viewer only looks.
# admin is a superuser and has every permission anyway.
USER_PERMISSIONS: dict[str, list[str]] = {
    "demo": [f"{action}_{model}" for model in DEMO_MODELS for action in ("add", "change", "delete", "view")],
    "alice": [f"{action}_{model}" for model in DEMO_MODELS for action in ("add", "change", "delete", "view")],
    "viewer": [f"view_{model}" for model in DEMO_MODELS],
}

STREAMS: dict[str, list[dict[str, Any]]] = {
    "demo": [
        {
            "name": "Lung Cancer Immunotherapy Monitor",
            "purpose": "Track new evidence on immunotherapy and targeted therapy in non-small cell lung cancer, "
                       "with a focus on resistance mechanisms and perioperative use.",
            "report_frequency": "weekly",
            "semantic": {
                "topics": ["EGFR-mutant NSCLC", "KRAS G12C inhibitors", "Perioperative immunotherapy",
                           "Resistance to tyrosine kinase inhibitors"],
                "entities": ["osimertinib", "pembrolizumab", "sotorasib", "circulating tumor DNA"],
                "scope": "Human studies and translational work; exclude case reports.",
            },
            "retrieval": {
                "queries": ["osimertinib resistance MET amplification", "neoadjuvant nivolumab NSCLC",
                            "KRAS G12C sotorasib adagrasib"],
                "sources": ["pubmed", "clinicaltrials.gov"],
                "filters": {"min_year": 2022},
            },
            "presentation": {"categories": [
                {"name": "Clinical trials", "description": "Phase 2/3 results and trial updates"},
                {"name": "Resistance biology", "description": "Mechanisms of acquired and primary resistance"},
                {"name": "Biomarkers", "description": "ctDNA, PD-L1 and co-mutation findings"},
            ]},
            "channels": [
                {"name": "NSCLC clinical trials", "type": "clinical", "keywords": ["NSCLC", "phase 3", "randomized"]},
                {"name": "Resistance research", "type": "scientific", "keywords": ["resistance", "osimertinib", "MET"]},
            ],
            "report": {
                "title": "Weekly digest: lung cancer immunotherapy and targeted therapy",
                "summary": "This week's articles center on resistance to EGFR inhibitors and on perioperative "
                           "immunotherapy. Several trials report progression-free survival benefits, and two "
                           "translational studies point to MET-driven bypass signaling as a recurring escape route.",
                "query": "osimertinib pembrolizumab NSCLC resistance immunotherapy",
                "topic": "lung-cancer",
            },
        },
        {
            "name": "CRISPR Therapeutics Watch",
            "purpose": "Follow clinical translation of gene editing: ex vivo and in vivo CRISPR therapies, base and "
                       "prime editing, and their safety signals.",
            "report_frequency": "biweekly",
            "semantic": {
                "topics": ["Ex vivo editing for hemoglobinopathies", "In vivo liver editing", "Off-target safety"],
                "entities": ["exagamglogene autotemcel", "base editing", "prime editing", "lipid nanoparticles"],
                "scope": "Clinical and late preclinical studies.",
            },
            "retrieval": {
                "queries": ["CRISPR sickle cell fetal hemoglobin", "in vivo base editing PCSK9", "off-target editing"],
                "sources": ["pubmed"],
                "filters": {"min_year": 2021},
            },
            "presentation": {"categories": [
                {"name": "Clinical results", "description": "Trials in patients"},
                {"name": "Delivery and safety", "description": "LNP/AAV delivery, off-target and immune findings"},
            ]},
            "channels": [
                {"name": "Gene editing trials", "type": "clinical", "keywords": ["CRISPR", "gene editing", "trial"]},
                {"name": "Regulatory news", "type": "regulatory", "keywords": ["approval", "FDA", "EMA"]},
            ],
        },
    ],
    "alice": [
        {
            "name": "Heart Failure Therapies",
            "purpose": "Alice's private stream: SGLT2 inhibitors and finerenone in heart failure.",
            "report_frequency": "monthly",
            "semantic": {"topics": ["SGLT2 inhibitors in heart failure", "Finerenone"], "entities": ["dapagliflozin"],
                         "scope": ""},
            "retrieval": {"queries": ["dapagliflozin heart failure"], "sources": ["pubmed"], "filters": {}},
            "presentation": {"categories": [{"name": "Trials", "description": "Outcome trials"}]},
            "channels": [{"name": "HF trials", "type": "clinical", "keywords": ["heart failure"]}],
        },
    ],
}

# The demo's MCP tool server (pages/demo/mcp_server.py): the article corpus over MCP, started over stdio by the chat
# engine for each call; its tools (corpus__search_articles, corpus__get_article) on these pages, approval first.
MCP_SERVER_NAME = "corpus"
MCP_SERVER_PAGES = ["streams_list"]

REPORT_SIZE = 12
# Staff demo users may look at (never change) the chat's records and the demo's data in the admin.
VIEW_APPS = ("pagechat", "pagechat_tools", "pagechat_payloads", "pagechat_pages", "pagechat_demo")


def view_permissions() -> list[Permission]:
    """The `view_*` permissions of the product's and the demo's models."""
    return list(Permission.objects.filter(content_type__app_label__in=VIEW_APPS, codename__startswith="view_"))


class Command(BaseCommand):
    help = "Create the demo users (demo/demo, admin/admin, alice/alice, viewer/viewer), their permissions, sample streams, a report and API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="Printed in the login hint.")
        parser.add_argument("--force", action="store_true",
                            help="Run even with DEBUG off (creates accounts whose password is their username).")

    def handle(self, *args: Any, base_url: str, force: bool = False, **options: Any) -> None:
        if not settings.DEBUG and not force:
            raise CommandError("demo_setup creates accounts whose password equals their username; it refuses to run "
                               "with DEBUG off (a production site). Set DEBUG=1 for a development copy, or pass --force.")
        with transaction.atomic():
            # The corpus normally arrives with `migrate`; reload it if something (e.g. a flush) emptied the table.
            loaded = load_articles(Article)
            users = {username: self._user(username, password, staff, superuser)
                     for username, password, staff, superuser in USERS}
            for username, codenames in USER_PERMISSIONS.items():
                # exactly these: a rerun also takes back what someone granted by hand
                users[username].user_permissions.set(Permission.objects.filter(content_type__app_label="pagechat_demo", codename__in=codenames))
            for username, streams in STREAMS.items():
                for spec in streams:
                    self._stream(users[username], spec)
            tokens = {username: Token.objects.get_or_create(user=user)[0].key for username, user in users.items()}
            viewing = view_permissions()
            for username, _, staff, superuser in USERS:
                if staff and not superuser:  # a superuser has every permission already
                    users[username].user_permissions.add(*viewing)
        if loaded:
            # loaded in bulk (no save signals), maybe over an index that kept a flushed table's rows: index them anew
            source_rebuild(ARTICLES)
            self.stdout.write(f"Loaded {loaded} articles into the corpus.")
        refreshed = self._mcp_server()  # outside the transaction: it starts the server's process
        if refreshed.error:
            self.stdout.write(self.style.WARNING(f"MCP server {refreshed.server}: {refreshed.error}"))
        else:
            self.stdout.write(f"MCP server {refreshed.server}: {', '.join(refreshed.tools)} (admin: Pagechat tools > MCP servers).")
        self.stdout.write(self.style.SUCCESS("Demo data is ready."))
        self.stdout.write(f"Log in at {base_url.rstrip('/')}/login/")
        for username, password, staff, superuser in USERS:
            role = "superuser" if superuser else "staff" if staff else "view only" if username == "viewer" else "user"
            self.stdout.write(f"  {username} / {password}  ({role})")
        self.stdout.write(f"API token for demo: {tokens['demo']}")
        self.stdout.write("  e.g. curl -H 'Authorization: Token <token>' " f"{base_url.rstrip('/')}/api/conversations/")

    def _mcp_server(self) -> McpRefresh:
        """Register the demo's MCP server (staff's later changes to pages, approval or groups are kept) and list its tools."""
        where = {"command": sys.executable, "args": ["-m", "pages.demo.mcp_server"], "cwd": str(settings.BASE_DIR)}
        server, created = McpServer.objects.get_or_create(name=MCP_SERVER_NAME, defaults={
            "transport": McpServer.STDIO, "pages": MCP_SERVER_PAGES, "require_approval": True, "timeout": 30.0, **where})
        if not created and any(getattr(server, key) != value for key, value in where.items()):  # e.g. another checkout's venv
            for key, value in where.items():
                setattr(server, key, value)
            server.save()
        return mcp_server_refresh(server=server)

    def _user(self, username: str, password: str, staff: bool, superuser: bool) -> Any:
        """Get or create the user and bring flags and password to the documented values."""
        user, created = get_user_model().objects.get_or_create(username=username)
        changed = created or user.is_staff != staff or user.is_superuser != superuser or not user.is_active
        user.is_staff, user.is_superuser, user.is_active = staff, superuser, True
        # check_password first so a rerun doesn't rewrite (and re-hash) an unchanged password.
        if created or not user.check_password(password):
            user.set_password(password)
            changed = True
        if changed:
            user.save()
        return user

    def _stream(self, owner: Any, spec: dict[str, Any]) -> ResearchStream:
        """Create the stream (by owner + name) with channels and its report on first run; later runs leave it alone."""
        stream, created = ResearchStream.objects.get_or_create(
            owner=owner,
            name=spec["name"],
            defaults={key: spec[key] for key in ("purpose", "report_frequency", "semantic", "retrieval", "presentation")},
        )
        if created:
            Channel.objects.bulk_create(Channel(stream=stream, **channel) for channel in spec["channels"])
        report_spec = spec.get("report")
        if report_spec:
            report, _ = Report.objects.get_or_create(
                stream=stream, title=report_spec["title"], defaults={"summary": report_spec["summary"]}
            )
            if not report.articles.exists():
                report.articles.set(self._report_articles(report_spec["query"], report_spec["topic"]))
        return stream

    def _report_articles(self, query: str, topic: str) -> list[Article]:
        """REPORT_SIZE articles for a report: best search hits, topped up with the newest of the topic."""
        articles = article_search(query=query, topic=topic, limit=REPORT_SIZE)
        if len(articles) < REPORT_SIZE:
            seen = {article.pk for article in articles}
            articles += [a for a in Article.objects.filter(topic=topic) if a.pk not in seen][: REPORT_SIZE - len(articles)]
        return articles
