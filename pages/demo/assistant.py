"""The demo's chat pages, one module per page; importing them registers their pages, tools and payload types (and
the demo's words in other languages for the offline model: vocabulary)."""
from pages.demo import edit_stream, home, new_stream, reports, sources, streams_list, vocabulary  # noqa: F401
