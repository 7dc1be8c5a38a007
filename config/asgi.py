"""ASGI entry: HTTP to Django, websockets to the chat consumer behind token-or-session auth."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from chat.auth import TokenOrSessionAuthMiddleware  # noqa: E402
from chat.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": TokenOrSessionAuthMiddleware(URLRouter(websocket_urlpatterns)),
    }
)
