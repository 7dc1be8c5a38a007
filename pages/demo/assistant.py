"""The demo's chat pages, one module per page; importing them registers their pages, tools and payload types."""
from pages.demo import edit_stream, home, new_stream, reports, sources, streams_list  # noqa: F401
