"""Staff tune tools: enable/disable, require approval, override the description; see use and performance."""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import Avg, Count, Q
from django.utils.html import format_html_join
from django.utils.translation import gettext, gettext_lazy as _, ngettext

from chat.events.client import ClientJSONError, client_json
from chat.infra.places import places_get
from tools.mcp import McpRefresh, mcp_server_refresh, mcp_server_rows_forget, mcp_tool_rows_sync
from tools.mcp_client import env_template_problem
from tools.models import McpServer, Tool


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    list_display = ["name", "enabled", "requires_approval", "is_global", "registered", "calls", "errors", "mean_ms", "used_on"]
    list_editable = ["enabled", "requires_approval"]
    list_filter = ["enabled", "requires_approval", "is_global", "registered", "groups"]
    search_fields = ["name", "description", "description_override"]
    fields = ["name", "enabled", "requires_approval", "groups", "permissions", "description", "description_override", "is_global", "module",
              "registered", "used_on", "updated_at"]
    readonly_fields = ["name", "description", "permissions", "is_global", "module", "registered", "used_on", "updated_at"]
    filter_horizontal = ["groups"]

    def has_add_permission(self, request: Any) -> bool:
        return False

    def get_queryset(self, request: Any) -> Any:
        from chat.models import ToolCall

        qs = super().get_queryset(request)
        stats = {
            row["name"]: row
            for row in ToolCall.objects.values("name").annotate(n=Count("id"), e=Count("id", filter=Q(status="error")), avg=Avg("duration_ms"))
        }
        self._stats = stats
        return qs

    def _stat(self, obj: Tool, key: str) -> Any:
        return getattr(self, "_stats", {}).get(obj.name, {}).get(key)

    @admin.display(description=_("calls"))
    def calls(self, obj: Tool) -> int:
        return self._stat(obj, "n") or 0

    @admin.display(description=_("errors"))
    def errors(self, obj: Tool) -> int:
        return self._stat(obj, "e") or 0

    @admin.display(description=_("mean ms"))
    def mean_ms(self, obj: Tool) -> str:
        avg = self._stat(obj, "avg")
        return f"{avg:.1f}" if avg is not None else "—"

    @admin.display(description=_("used on"))
    def used_on(self, obj: Tool) -> str:
        if obj.is_global:
            return gettext("every page")
        return ", ".join(places_get().where_used(tool=obj.name)) or "—"


def _page_choices() -> list[tuple[str, str]]:
    return [(name, name) for name in places_get().page_names()]


STDIO_FIELDS = ("command", "args", "cwd", "env")


def may_run_commands(request: Any) -> bool:
    """Whether this user may register or edit a stdio server, i.e. choose a command this server runs: superusers only."""
    return bool(request.user.is_active and request.user.is_superuser)


class StrictJSONFormField(forms.JSONField):
    """Django's JSON form field reading its text the way every API transport does (chat.events.client.client_json):
    NaN, Infinity, NUL and lone surrogates are a form error, not a row the database refuses with a 500."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip():
            try:
                client_json(value, MAX_FIELD_BYTES, what="this value")
            except ClientJSONError as exc:
                raise forms.ValidationError(exc.error.message, code="invalid") from None
        return super().to_python(value)


MAX_FIELD_BYTES = 64 * 1024  # a list of arguments or a few header names, never a document


class McpServerForm(forms.ModelForm):
    """Checks what a call needs, and that headers and env name environment variables (never hold a secret).
    `may_run_commands` False (the admin sets it for staff who are not superusers): streamable HTTP only."""

    may_run_commands = True
    pages = forms.MultipleChoiceField(choices=_page_choices, required=False, widget=forms.CheckboxSelectMultiple,
                                      help_text=_("Chat pages whose assistant is offered this server's tools."))

    class Meta:
        model = McpServer
        fields = "__all__"
        field_classes = {"args": StrictJSONFormField, "env": StrictJSONFormField, "headers": StrictJSONFormField}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        transport = self.fields.get("transport")
        if not self.may_run_commands and isinstance(transport, forms.ChoiceField):
            transport.choices = [c for c in McpServer.TRANSPORTS if c[0] == McpServer.HTTP]
            transport.initial = McpServer.HTTP

    def _references(self, field: str, *, http_names: bool) -> dict[str, str]:
        value = self.cleaned_data.get(field) or {}
        if not isinstance(value, dict):
            raise forms.ValidationError(gettext('A JSON object, e.g. {"X-Api-Key": "API_KEY"}.'))
        problems = [f"{key}: {problem}" for key, ref in value.items() if (problem := env_template_problem(ref))]
        if http_names:
            problems += [gettext("%(name)s is not a header name") % {"name": repr(key)} for key in value if not key or not key.replace("-", "").isalnum()]
        if problems:
            raise forms.ValidationError(problems)
        return value

    def clean_headers(self) -> dict[str, str]:
        return self._references("headers", http_names=True)

    def clean_env(self) -> dict[str, str]:
        return self._references("env", http_names=False)

    def clean_args(self) -> list[str]:
        value = self.cleaned_data.get("args") or []
        if not isinstance(value, list) or not all(isinstance(a, (str, int, float)) for a in value):
            raise forms.ValidationError(gettext('A JSON list of strings, e.g. ["-m", "my_server"].'))
        return [str(a) for a in value]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        if data.get("transport") == McpServer.STDIO and not self.may_run_commands:
            self.add_error("transport", gettext("Only superusers may register a stdio server: it runs a command on this server."))
        if data.get("transport") == McpServer.STDIO and not data.get("command"):
            self.add_error("command", gettext("A stdio server needs the command that starts it."))
        if data.get("transport") == McpServer.HTTP and not data.get("url"):
            self.add_error("url", gettext("A streamable HTTP server needs its URL."))
        return data


def _report(request: Any, admin_: admin.ModelAdmin, outcome: McpRefresh) -> None:
    if outcome.error:
        admin_.message_user(request, gettext("%(server)s: listing its tools failed: %(error)s") % {"server": outcome.server, "error": outcome.error},
                            messages.WARNING)
    else:
        count = len(outcome.tools)
        admin_.message_user(request, ngettext("%(server)s: %(count)d tool (%(names)s).", "%(server)s: %(count)d tools (%(names)s).", count)
                            % {"server": outcome.server, "count": count, "names": ", ".join(outcome.tools) or gettext("none")})


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    """Staff register MCP tool servers; saving one lists its tools (the next turn offers them, in every process)."""

    form = McpServerForm
    list_display = ["name", "transport", "enabled", "require_approval", "tool_count", "tools_refreshed_at", "tools_error"]
    list_filter = ["enabled", "transport", "groups"]
    search_fields = ["name", "command", "url"]
    filter_horizontal = ["groups"]
    readonly_fields = ["listed_tools", "tools_refreshed_at", "tools_error", "updated_at"]
    fieldsets = [
        (None, {"fields": ["name", "enabled", "transport", "timeout", "require_approval"]}),
        (_("stdio"), {"fields": ["command", "args", "cwd", "env"]}),
        (_("streamable HTTP"), {"fields": ["url", "headers"]}),
        (_("Where and for whom"), {"fields": ["pages", "on_every_page", "groups"]}),
        (_("Tools"), {"fields": ["listed_tools", "tools_refreshed_at", "tools_error", "updated_at"]}),
    ]
    actions = ["refresh_tools"]

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = cast(type[McpServerForm], super().get_form(request, obj, change=change, **kwargs))
        form.may_run_commands = may_run_commands(request)  # on the subclass made for this request
        return form

    def get_readonly_fields(self, request: Any, obj: Any = None) -> Any:
        """A stdio server's command is code this server runs: only superusers set it."""
        fields = list(super().get_readonly_fields(request, obj))
        return fields if may_run_commands(request) else [*fields, *(f for f in STDIO_FIELDS if f not in fields)]

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        """Staff who are not superusers may view a stdio server, not change it (its command, or anything it runs with)."""
        if obj is not None and obj.transport == McpServer.STDIO and not may_run_commands(request):
            return False
        return super().has_change_permission(request, obj)

    @admin.display(description=_("tools"))
    def tool_count(self, obj: McpServer) -> int:
        return len(obj.tools or ())

    @admin.display(description=_("listed tools"))
    def listed_tools(self, obj: McpServer) -> Any:
        from tools.mcp import tool_name

        return format_html_join("", "<div><code>{}</code> {}</div>",
                                ((tool_name(obj.name, str(t.get("name", ""))), t.get("description", "")) for t in obj.tools or ())) or "—"

    def save_model(self, request: Any, obj: McpServer, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and "name" in form.changed_data:  # the old name's tools are gone
            mcp_server_rows_forget(names=[form.initial["name"]])
        if obj.enabled:
            _report(request, self, mcp_server_refresh(server=obj))
        if "require_approval" in form.changed_data:
            mcp_tool_rows_sync(server=obj, approval_changed=True)

    def delete_model(self, request: Any, obj: McpServer) -> None:
        mcp_server_rows_forget(names=[obj.name])
        super().delete_model(request, obj)

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        mcp_server_rows_forget(names=list(queryset.values_list("name", flat=True)))
        super().delete_queryset(request, queryset)

    @admin.action(description=_("Refresh tools (list them from the server now)"), permissions=["change"])
    def refresh_tools(self, request: Any, queryset: Any) -> None:
        for server in queryset:
            _report(request, self, mcp_server_refresh(server=server))
