"""The ASGI entry of tests.chat.mounted_host, as README's host section writes it: no websocket path but the API's own."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.chat.mounted_host")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

import chat.asgi  # noqa: E402

application = ProtocolTypeRouter({"http": django_asgi_app, "websocket": chat.asgi.websocket_application()})
