"""Sources: a host's own models made searchable by the assistant, scoped per user, with citations.

A host declares a `Source` in its `assistant.py` (`register_source(Source(...))`); each becomes a search tool a page
offers like any tool. docs/sources.md describes the API, the backends, the index and the guarantees."""
