"""The transports: HTTP, SSE and REST views, the websocket consumer and the standard clients' endpoints, thin over the services."""
