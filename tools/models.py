"""ORM mirror of registered tools: staff tune them here, code stays the source of truth."""
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext

# an MCP server's name starts its tools' names (<name>__<tool>): a model provider accepts [a-zA-Z0-9_-] only
MCP_SERVER_NAME = RegexValidator(r"^[a-z0-9](?:[a-z0-9-]|_(?!_))*$", "Lower-case letters, digits, '-' and single '_'.")


class Tool(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True, help_text="The description in code.")
    description_override = models.TextField(blank=True, help_text="Shown to the model instead, when set.")
    enabled = models.BooleanField(default=True)
    requires_approval = models.BooleanField(default=False)
    is_global = models.BooleanField(default=False)
    module = models.CharField(max_length=200, blank=True)
    registered = models.BooleanField(default=True, help_text="False when the code no longer defines it.")
    permissions = models.JSONField(default=list, blank=True, help_text="Django permissions the code requires (all of them).")
    groups = models.ManyToManyField(
        "auth.Group", blank=True, related_name="+",
        help_text="When set, only members of these groups (and superusers) are offered the tool. Takes effect on the next turn.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class McpServer(models.Model):
    """An MCP tool server staff registered: its tools join the registry as `<name>__<tool>` (tools/mcp.py).

    Secrets are never stored: `headers` and `env` map a header or variable to the *name* of an environment
    variable of this process (or a template such as `Bearer ${TOKEN}`), read when a call is made."""

    STDIO, HTTP = "stdio", "http"
    TRANSPORTS = [(STDIO, "stdio (a command this server starts)"), (HTTP, "streamable HTTP (a URL)")]

    name = models.CharField(
        max_length=40, unique=True, validators=[MCP_SERVER_NAME],
        help_text="Lower-case letters, digits, '-' and '_' (no '__'): its tools are named <name>__<tool>.",
    )
    transport = models.CharField(max_length=10, choices=TRANSPORTS, default=STDIO)
    command = models.CharField(max_length=500, blank=True, help_text="stdio: the program to start (e.g. python or npx).")
    args = models.JSONField(default=list, blank=True, help_text='stdio: its arguments, a JSON list (e.g. ["-m", "my_server"]).')
    cwd = models.CharField(max_length=500, blank=True, help_text="stdio: the working directory (blank: this process's).")
    env = models.JSONField(
        default=dict, blank=True,
        help_text='stdio: variables to pass, {"VARIABLE": "NAME_IN_THIS_ENVIRONMENT"}; values are names, never secrets.',
    )
    url = models.URLField(max_length=500, blank=True, help_text="streamable HTTP: the endpoint, e.g. https://tools.example.com/mcp")
    headers = models.JSONField(
        default=dict, blank=True,
        help_text='HTTP headers, {"Authorization": "Bearer ${API_TOKEN}"} or {"X-Api-Key": "API_KEY"}: environment '
                  "variable names, read at each call; the secret itself is never stored.",
    )
    enabled = models.BooleanField(default=True)
    timeout = models.FloatField(
        default=30.0, validators=[MinValueValidator(1), MaxValueValidator(600)],
        help_text="Seconds one call may take in all (start, connect, run); then it is stopped.",
    )
    require_approval = models.BooleanField(default=True, help_text="Its tools ask the user before they run (recommended).")
    pages = models.JSONField(default=list, blank=True, help_text="Chat pages whose assistant is offered this server's tools.")
    on_every_page = models.BooleanField(default=False, help_text="Offer its tools on every page.")
    groups = models.ManyToManyField(
        "auth.Group", blank=True, related_name="+",
        help_text="When set, only members of these groups (and superusers) are offered its tools. Takes effect on the next turn.",
    )
    tools = models.JSONField(default=list, blank=True, editable=False, help_text="The server's tools as last listed.")
    tools_refreshed_at = models.DateTimeField(null=True, blank=True, editable=False)
    tools_error = models.TextField(blank=True, editable=False, help_text="Why the last listing failed, if it did.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """An HTTP server's URL must name a host whose every address is public or in CHAT_MCP_ALLOWED_NETWORKS
        (saving it in the admin connects there at once, with its headers); the host name is resolved, nothing is sent."""
        super().clean()
        if self.transport != self.HTTP or not self.url:
            return
        from chat.conf import chat_settings
        from tools.addresses import networks, url_refusal

        why = url_refusal(self.url, networks(chat_settings.CHAT_MCP_ALLOWED_NETWORKS))
        if why:
            raise ValidationError({"url": gettext(
                "This URL is refused (%(why)s): only servers at public addresses can be registered, unless "
                "CHAT_MCP_ALLOWED_NETWORKS allows the network.") % {"why": why}})
