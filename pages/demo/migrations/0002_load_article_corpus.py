"""Data migration: load the shipped demo corpus (pages/demo/data/articles.json) so a fresh `migrate` has articles."""
from django.db import migrations

from pages.demo.data import load_articles, unload_articles


def load(apps, schema_editor) -> None:
    """Insert the corpus into the historical Article model (skips ids already present)."""
    load_articles(apps.get_model("pagechat_demo", "Article"))


def unload(apps, schema_editor) -> None:
    """Remove the corpus articles on reverse migration."""
    unload_articles(apps.get_model("pagechat_demo", "Article"))


class Migration(migrations.Migration):
    dependencies = [("pagechat_demo", "0001_initial")]

    operations = [migrations.RunPython(load, unload)]
