"""Standard clients on the same agent: AG-UI and the AI SDK's UI message stream, translated from protocol v1 events."""
