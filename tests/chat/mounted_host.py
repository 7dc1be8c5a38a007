"""Settings of a host as README's "Add pagechat to your project" makes one: the chat API mounted at /assistant/
(tests.chat.mounted_urls), served by README's ASGI entry (tests.chat.mounted_asgi)."""
from config.settings import *  # noqa: F403

ROOT_URLCONF = "tests.chat.mounted_urls"
