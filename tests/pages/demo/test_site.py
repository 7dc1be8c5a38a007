"""Demo site: pages, ownership, forms, the shipped corpus, search and demo_setup."""
from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from pages.demo.models import Article, Channel, Report, ResearchStream
from pages.demo.search import article_get, article_search, query_terms

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    # Hashing speed is irrelevant here; demo_setup and logins hash several passwords.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def owner(django_user_model: Any) -> Any:
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user(username="owner", password="pw")
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="pagechat_demo"))  # every demo flow
    return user


@pytest.fixture
def other(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="other", password="pw")


def make_stream(user: Any, name: str = "Lung watch") -> ResearchStream:
    stream = ResearchStream.objects.create(
        owner=user, name=name, purpose="Follow NSCLC",
        semantic={"topics": ["EGFR-mutant NSCLC"], "entities": ["osimertinib"], "scope": ""},
        retrieval={"queries": ["osimertinib resistance"], "sources": ["pubmed"], "filters": {"min_year": 2022}},
        presentation={"categories": [{"name": "Trials", "description": "Phase 3"}]},
    )
    Channel.objects.create(stream=stream, name="Trials", type="clinical", keywords=["NSCLC"])
    return stream


def make_report(stream: ResearchStream) -> Report:
    report = Report.objects.create(stream=stream, title="Weekly digest", summary="Things happened.")
    report.articles.set(Article.objects.filter(topic="lung-cancer")[:3])
    return report


@pytest.fixture
def site(owner: Any, client: Client) -> dict[str, Any]:
    """A logged-in owner with one stream and one report."""
    stream = make_stream(owner)
    report = make_report(stream)
    client.force_login(owner)
    return {"stream": stream, "report": report, "article": report.articles.first()}


def page_urls(site: dict[str, Any]) -> dict[str, str]:
    return {
        "home": reverse("pages:home"),
        "streams_list": reverse("pages:streams_list"),
        "new_stream": reverse("pages:new_stream"),
        "edit_research_stream": reverse("pages:stream_edit", args=[site["stream"].pk]),
        "reports": reverse("pages:reports_list"),
        "report_detail": reverse("pages:report_detail", args=[site["report"].pk]),
        "article_detail": reverse("pages:article_detail", args=[site["article"].external_id]),
    }


EXPECTED_PAGE = {
    "home": "home", "streams_list": "streams_list", "new_stream": "new_stream",
    "edit_research_stream": "edit_research_stream", "reports": "reports", "report_detail": "reports",
    "article_detail": "reports",
}


# ---- access --------------------------------------------------------------------------------------------------


def test_anonymous_is_redirected_to_login(site: dict[str, Any]) -> None:
    anonymous = Client()
    for url in page_urls(site).values():
        response = anonymous.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/login/?next="), url


def test_login_page_renders_without_tray_and_logs_in(owner: Any) -> None:
    anonymous = Client()
    response = anonymous.get("/login/")
    assert response.status_code == 200
    assert b'id="login-form"' in response.content
    assert b"data-chat-tray" not in response.content
    response = anonymous.post("/login/", {"username": "owner", "password": "pw"})
    assert response.status_code == 302 and response["Location"] == "/"


def test_logout_is_a_post(site: dict[str, Any], client: Client) -> None:
    response = client.post(reverse("logout"))
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert client.get(reverse("pages:home")).status_code == 302


# ---- pages -----------------------------------------------------------------------------------------------------


def test_every_page_renders_with_tray_variables(site: dict[str, Any], client: Client) -> None:
    for key, url in page_urls(site).items():
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.context["page_name"] == EXPECTED_PAGE[key]
        chat_context = response.context["chat_context"]
        assert chat_context["current_page"] == EXPECTED_PAGE[key]
        assert chat_context["current_route"] == url
        assert b"data-chat-tray" in response.content, url  # the tray include is live


def test_pages_obey_the_csp(site: dict[str, Any], client: Client) -> None:
    """No inline script or inline handler; every executable script is an external file with the nonce."""
    for url in page_urls(site).values():
        response = client.get(url)
        assert "Content-Security-Policy" in response.headers
        html = response.content.decode()
        for tag in re.findall(r"<script\b[^>]*>", html):
            if 'type="application/json"' in tag:
                continue
            assert "src=" in tag and "nonce=" in tag, (url, tag)
        assert not re.search(r"<[^>]+\son[a-z]+\s*=", html), url
        assert "javascript:" not in html


def test_edit_page_contexts_and_tabs(site: dict[str, Any], client: Client) -> None:
    stream = site["stream"]
    url = reverse("pages:stream_edit", args=[stream.pk])
    expected_ids = {
        "semantic": ["field-stream-name", "field-purpose", "field-report-frequency", "field-topics", "field-entities",
                     "field-scope"],
        "retrieval": ["field-queries", "field-sources", "field-filters", "field-channels"],
        "presentation": ["field-categories"],
    }
    for tab, ids in expected_ids.items():
        response = client.get(url, {"tab": tab})
        assert response.status_code == 200
        context = response.context["chat_context"]
        assert context["active_tab"] == tab
        assert context["entity_type"] == "research_stream" and context["entity_id"] == stream.pk
        assert context["current_schema"]["stream_name"] == "Lung watch"
        assert context["current_schema"]["channels"] == [{"name": "Trials", "type": "clinical", "keywords": ["NSCLC"]}]
        html = response.content.decode()
        for field_id in ids:
            assert f'id="{field_id}"' in html, (tab, field_id)
    # Unknown tab falls back to semantic.
    assert client.get(url, {"tab": "nope"}).context["chat_context"]["active_tab"] == "semantic"
    # Current values are rendered into the fields.
    html = client.get(url, {"tab": "retrieval"}).content.decode()
    assert "osimertinib resistance" in html and "min_year: 2022" in html and "Trials | clinical | NSCLC" in html


def test_edit_tabs_save(site: dict[str, Any], client: Client) -> None:
    stream = site["stream"]
    url = reverse("pages:stream_edit", args=[stream.pk])
    response = client.post(url, {
        "tab": "semantic", "name": "Renamed", "purpose": "New purpose", "report_frequency": "daily",
        "topics": "KRAS G12C\n\nKRAS G12C\n  STK11 loss  ", "entities": "sotorasib", "scope": "Adults",
    })
    assert response.status_code == 302 and response["Location"].endswith("?tab=semantic")
    stream.refresh_from_db()
    assert stream.name == "Renamed" and stream.report_frequency == "daily"
    assert stream.semantic == {"topics": ["KRAS G12C", "STK11 loss"], "entities": ["sotorasib"], "scope": "Adults"}

    response = client.post(url, {
        "tab": "retrieval", "queries": "q1\nq2", "sources": "pubmed", "filters": "min_year: 2023\nhumans_only: true",
        "channels": "Trials | clinical | NSCLC, phase 3\nNews feed | news",
    })
    assert response.status_code == 302
    stream.refresh_from_db()
    assert stream.retrieval == {"queries": ["q1", "q2"], "sources": ["pubmed"],
                                "filters": {"min_year": 2023, "humans_only": True}}
    assert [c.as_dict() for c in stream.channels.all()] == [
        {"name": "Trials", "type": "clinical", "keywords": ["NSCLC", "phase 3"]},
        {"name": "News feed", "type": "news", "keywords": []},
    ]

    response = client.post(url, {"tab": "presentation", "categories": "Trials: Phase 3 results\nReviews"})
    assert response.status_code == 302
    stream.refresh_from_db()
    assert stream.presentation == {"categories": [{"name": "Trials", "description": "Phase 3 results"},
                                                  {"name": "Reviews", "description": ""}]}


def test_edit_invalid_input_rerenders_with_errors(site: dict[str, Any], client: Client) -> None:
    stream = site["stream"]
    url = reverse("pages:stream_edit", args=[stream.pk])
    response = client.post(url, {"tab": "retrieval", "channels": "Bad | podcast | x"})
    assert response.status_code == 400
    assert "type must be one of" in response.content.decode()
    response = client.post(url, {"tab": "semantic", "name": "", "report_frequency": "weekly"})
    assert response.status_code == 400
    assert stream.channels.count() == 1  # nothing was written


def test_new_stream_creates_and_redirects(owner: Any, client: Client) -> None:
    client.force_login(owner)
    response = client.post(reverse("pages:new_stream"), {
        "name": "Heart failure", "purpose": "SGLT2", "report_frequency": "monthly",
        "topics": "SGLT2 inhibitors\nfinerenone", "channels": "HF trials | clinical | heart failure",
    })
    stream = ResearchStream.objects.get(name="Heart failure")
    assert response.status_code == 302 and response["Location"] == stream.get_absolute_url()
    assert stream.owner == owner and stream.topics == ["SGLT2 inhibitors", "finerenone"]
    assert stream.channels.get().keywords == ["heart failure"]
    page = client.get(response["Location"])
    assert "Created" in page.content.decode()  # the flash message
    assert client.post(reverse("pages:new_stream"), {"name": ""}).status_code == 400


def test_lists_show_only_own_data(site: dict[str, Any], other: Any, client: Client) -> None:
    foreign = make_stream(other, name="Other's secret stream")
    make_report(foreign)
    streams = client.get(reverse("pages:streams_list"))
    assert "Lung watch" in streams.content.decode()
    assert "secret" not in streams.content.decode()
    assert [s["name"] for s in streams.context["chat_context"]["streams"]] == ["Lung watch"]
    reports = client.get(reverse("pages:reports_list"))
    assert [r["id"] for r in reports.context["chat_context"]["reports"]] == [site["report"].pk]


def test_other_users_objects_are_404(site: dict[str, Any], other: Any, client: Client) -> None:
    foreign = make_stream(other, name="Other's stream")
    foreign_report = make_report(foreign)
    edit = reverse("pages:stream_edit", args=[foreign.pk])
    assert client.get(edit).status_code == 404
    assert client.post(edit, {"tab": "semantic", "name": "hijacked", "report_frequency": "daily"}).status_code == 404
    foreign.refresh_from_db()
    assert foreign.name == "Other's stream"
    assert client.get(reverse("pages:report_detail", args=[foreign_report.pk])).status_code == 404
    assert client.get(reverse("pages:reports_list"), {"stream": foreign.pk}).status_code == 404
    assert client.get(reverse("pages:stream_edit", args=[999999])).status_code == 404
    # An article is shared, but a foreign ?report= gives no back link.
    article = foreign_report.articles.first()
    response = client.get(reverse("pages:article_detail", args=[article.external_id]), {"report": foreign_report.pk})
    assert response.status_code == 200 and "report_id" not in response.context["chat_context"]


def test_report_and_article_contexts(site: dict[str, Any], client: Client) -> None:
    report, article = site["report"], site["article"]
    context = client.get(reverse("pages:report_detail", args=[report.pk])).context["chat_context"]
    assert context["entity_type"] == "report" and context["report_id"] == report.pk
    assert {a["external_id"] for a in context["articles"]} == set(report.articles.values_list("external_id", flat=True))
    response = client.get(reverse("pages:article_detail", args=[article.external_id]), {"report": report.pk})
    context = response.context["chat_context"]
    assert context["entity_type"] == "article" and context["article_id"] == article.external_id
    assert context["report_id"] == report.pk and context["article"]["title"] == article.title
    assert "Background." in response.content.decode()  # structured abstract split into sections
    assert client.get(reverse("pages:article_detail", args=["nope"])).status_code == 404


def test_staff_sees_admin_link(site: dict[str, Any], owner: Any, client: Client) -> None:
    assert b'href="/admin/"' not in client.get(reverse("pages:home")).content
    owner.is_staff = True
    owner.save()
    assert b'href="/admin/"' in client.get(reverse("pages:home")).content


# ---- corpus and search -------------------------------------------------------------------------------------------


@pytest.fixture
def corpus() -> None:
    """The shipped corpus (a no-op after migrate; reloads it if a transactional test elsewhere flushed the table)."""
    from pages.demo.data import load_articles

    load_articles(Article)


def test_corpus_loaded_by_migration() -> None:
    ids = list(Article.objects.values_list("external_id", flat=True))
    assert len(ids) >= 300
    assert len(ids) == len(set(ids))
    assert Article.objects.values("topic").distinct().count() >= 10
    assert Article.objects.values("title").distinct().count() == len(ids)


@pytest.mark.parametrize(
    ("query", "topic"),
    [
        ("CRISPR sickle cell disease", "gene-editing"),
        ("osimertinib EGFR resistance", "lung-cancer"),
        ("lecanemab amyloid Alzheimer's", "neurology"),
        ("semaglutide obesity weight reduction", "metabolic-disease"),
        ("trastuzumab deruxtecan HER2", "breast-cancer"),
    ],
)
def test_search_finds_relevant_articles(corpus: None, query: str, topic: str) -> None:
    results = article_search(query=query, limit=5)
    assert len(results) == 5
    assert all(article.topic == topic for article in results[:3]), [(a.topic, a.title) for a in results]


def test_search_limit_topic_and_edge_cases(corpus: None) -> None:
    assert len(article_search(query="cancer", limit=3)) == 3
    assert len(article_search(query="cancer", limit=1000)) <= 100
    assert article_search(query="cancer", limit=0) == []
    assert article_search(query="", limit=5) == []
    assert article_search(query="the of and", limit=5) == []
    assert article_search(query="zzzyxwq", limit=5) == []
    in_topic = article_search(query="heart failure", topic="cardiology", limit=50)
    assert in_topic and all(a.topic == "cardiology" for a in in_topic)
    newest = article_search(query="", topic="microbiome", limit=4)
    assert len(newest) == 4 and all(a.topic == "microbiome" for a in newest)
    assert article_search(query="'; drop table pagechat_demo_article; --", limit=3) is not None
    assert Article.objects.count() >= 300


def test_query_terms() -> None:
    assert query_terms("Papers about CRISPR-Cas9 in the sickle cell, CRISPR!") == ["crispr-cas9", "sickle", "cell", "crispr"]


def test_article_get(corpus: None) -> None:
    article = Article.objects.order_by("external_id").first()
    assert article_get(external_id=article.external_id) == article
    assert article_get(external_id="does-not-exist") is None


# ---- demo_setup --------------------------------------------------------------------------------------------------


def test_demo_setup_refuses_with_debug_off_unless_forced(django_user_model: Any, settings: Any) -> None:
    from django.core.management.base import CommandError

    settings.DEBUG = False
    with pytest.raises(CommandError, match="refuses to run with DEBUG off"):
        call_command("demo_setup", stdout=io.StringIO())
    assert not django_user_model.objects.filter(username="demo").exists()
    call_command("demo_setup", "--force", stdout=io.StringIO())
    assert django_user_model.objects.get(username="demo").check_password("demo")


def test_demo_setup_is_idempotent(django_user_model: Any, settings: Any) -> None:
    from rest_framework.authtoken.models import Token

    settings.DEBUG = True  # a development copy (with DEBUG off it refuses without --force)

    def run() -> str:
        out = io.StringIO()
        call_command("demo_setup", stdout=out)
        return out.getvalue()

    first = run()
    counts = (django_user_model.objects.count(), ResearchStream.objects.count(), Report.objects.count(),
              Channel.objects.count(), Token.objects.count(), Article.objects.count())
    second = run()
    assert counts == (django_user_model.objects.count(), ResearchStream.objects.count(), Report.objects.count(),
                      Channel.objects.count(), Token.objects.count(), Article.objects.count())

    demo = django_user_model.objects.get(username="demo")
    assert demo.is_staff and not demo.is_superuser and demo.check_password("demo")
    admin = django_user_model.objects.get(username="admin")
    assert admin.is_superuser and admin.check_password("admin")
    alice = django_user_model.objects.get(username="alice")
    assert not alice.is_staff and alice.check_password("alice")
    assert ResearchStream.objects.filter(owner=demo).count() == 2
    report = Report.objects.get(stream__owner=demo)
    assert report.articles.count() == 12
    token = Token.objects.get(user=demo).key
    assert token in first and token in second and "/login/" in first and "demo / demo" in first

