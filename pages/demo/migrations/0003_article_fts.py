"""SQLite: an FTS5 index of the articles (title, keywords, abstract; porter stemming) kept in step by triggers.
PostgreSQL needs no table: it searches with to_tsvector/setweight at query time (the corpus is small)."""
from django.db import migrations

CREATE = [
    "CREATE VIRTUAL TABLE pagechat_demo_article_fts USING fts5(title, keywords, abstract, "
    "content='pagechat_demo_article', content_rowid='id', tokenize='porter unicode61')",
    "CREATE TRIGGER pagechat_demo_article_fts_ai AFTER INSERT ON pagechat_demo_article BEGIN "
    "INSERT INTO pagechat_demo_article_fts(rowid, title, keywords, abstract) VALUES (new.id, new.title, new.keywords, new.abstract); END",
    "CREATE TRIGGER pagechat_demo_article_fts_ad AFTER DELETE ON pagechat_demo_article BEGIN "
    "INSERT INTO pagechat_demo_article_fts(pagechat_demo_article_fts, rowid, title, keywords, abstract) "
    "VALUES ('delete', old.id, old.title, old.keywords, old.abstract); END",
    "CREATE TRIGGER pagechat_demo_article_fts_au AFTER UPDATE ON pagechat_demo_article BEGIN "
    "INSERT INTO pagechat_demo_article_fts(pagechat_demo_article_fts, rowid, title, keywords, abstract) "
    "VALUES ('delete', old.id, old.title, old.keywords, old.abstract); "
    "INSERT INTO pagechat_demo_article_fts(rowid, title, keywords, abstract) VALUES (new.id, new.title, new.keywords, new.abstract); END",
    "INSERT INTO pagechat_demo_article_fts(pagechat_demo_article_fts) VALUES ('rebuild')",
]
DROP = [
    "DROP TRIGGER IF EXISTS pagechat_demo_article_fts_ai",
    "DROP TRIGGER IF EXISTS pagechat_demo_article_fts_ad",
    "DROP TRIGGER IF EXISTS pagechat_demo_article_fts_au",
    "DROP TABLE IF EXISTS pagechat_demo_article_fts",
]


def forward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for sql in CREATE:
            schema_editor.execute(sql)


def backward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for sql in DROP:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("pagechat_demo", "0002_load_article_corpus")]

    operations = [migrations.RunPython(forward, backward)]
