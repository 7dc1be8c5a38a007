"""ASGI entry: HTTP to Django, websockets to the chat consumer behind token-or-session auth."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from chat.asgi import websocket_application  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # the tray uses the reversed route (/api/ws/); /ws/chat/ is protocol v1's documented address for programs
        "websocket": websocket_application(extra_paths=["ws/chat/"]),
    }
)
