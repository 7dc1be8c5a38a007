"""The demo's MCP tool server: the shipped article corpus over MCP (the official SDK's MCPServer, v1's FastMCP).

`python -m pages.demo.mcp_server` serves it over stdio (what `demo_setup` registers); `--http PORT` over streamable
HTTP on 127.0.0.1. It reads the corpus file (pages/demo/data/articles.json), not the database, and imports no
Django: a separate process that knows nothing of pagechat, like any third-party MCP server.
"""
from __future__ import annotations

import argparse
import re
from functools import cache
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from pages.demo.data import read_corpus

server = MCPServer("corpus", instructions="Search and read the Knowledge Horizon article corpus (biomedical abstracts).", log_level="WARNING")
_WORD = re.compile(r"[a-z0-9][a-z0-9\-]*")
# Where a query word counts most: title over keywords over abstract.
WEIGHTS = {"title": 3.0, "keywords": 2.0, "abstract": 1.0}
MAX_RESULTS = 20


@cache
def _corpus() -> tuple[dict[str, Any], ...]:
    return tuple(read_corpus())


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _score(article: dict[str, Any], terms: set[str]) -> float:
    return sum(weight * len(terms & _words(str(article.get(field, "")))) for field, weight in WEIGHTS.items())


@server.tool()
async def search_articles(query: str, ctx: Context, limit: int = 5, topic: str = "") -> str:
    """Search the article corpus by words of the title, keywords and abstract; optionally one topic (e.g. lung-cancer).
    Returns ids, titles, journals and dates, best first."""
    terms = {w for w in _words(query) if len(w) > 2}
    corpus = [a for a in _corpus() if not topic or a["topic"] == topic.strip().lower()]
    await ctx.report_progress(0, 2, f"Searching {len(corpus)} articles")
    ranked = sorted(((s, a) for a in corpus if (s := _score(a, terms)) > 0), key=lambda pair: (-pair[0], pair[1]["external_id"]))
    await ctx.report_progress(1, 2, f"{len(ranked)} articles match")
    hits = ranked[: max(1, min(limit, MAX_RESULTS))]
    await ctx.report_progress(2, 2, "Done")
    if not hits:
        return f"No article of the corpus matches {query!r}."
    return "\n".join(f"[{a['external_id']}] {a['title']} ({a['journal']}, {a['published_date']}, topic {a['topic']})" for _, a in hits)


@server.tool()
def get_article(external_id: str) -> str:
    """One article of the corpus by its id (as search_articles shows it): title, journal, date, authors, keywords and abstract."""
    article = next((a for a in _corpus() if a["external_id"] == external_id.strip()), None)
    if article is None:
        return f"The corpus has no article {external_id!r}."
    return (f"{article['title']}\n{article['journal']}, {article['published_date']}; topic {article['topic']}\n"
            f"Authors: {article['authors']}\nKeywords: {article['keywords']}\n\n{article['abstract']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    options = parser.parse_args(argv)
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
