"""Reading a system prompt given only as text (a request built without its structured input: a test, the eval judge,
a caller of the provider API) back into the offline model's `PromptContext`: the prompt's `# NAME` sections, the data
blocks inside them and the lines `chat.prompt.system` writes."""
from __future__ import annotations

import json
import re
from typing import Any

from chat.providers.offline.context import PromptContext
from chat.providers.offline.messages import DATA_BLOCKS, DATA_CLOSE, DATA_OPEN, data_blocks, data_unescape
from chat.providers.offline.offers import ActionOffer, Troubleshooting, parse_payloads

# a tool's line under CAPABILITIES' `## Tools` with its title
TOOL_LINE = re.compile(r'^- (\S+) \(title: "([^"]*)"\):', re.M)
# the prompt's LANGUAGE section: "The user's language is German (`de`)."
LANGUAGE_CODE = re.compile(r"^The user's language is .*? \(`([A-Za-z0-9-]+)`\)", re.M)
# the prompt's request context line: inside its data block, or plain (older prompts)
REQUEST_CONTEXT = re.compile(r'^Request context:(?: |\n<data source="request_context">\n)(.*)$', re.M)


def sections(system: str) -> dict[str, str]:
    """The system prompt's `# NAME` sections by name; a heading inside a data block is the block's text, not one."""
    out: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []
    in_data = False
    for line in system.split("\n"):
        heading = None if in_data else re.match(r"# ([A-Z][A-Z ]+)$", line)
        if heading:
            if name is not None:
                out[name] = "\n".join(lines).strip()
            name, lines = heading.group(1).strip(), []
            continue
        if DATA_OPEN.match(line):
            in_data = True
        elif line == DATA_CLOSE:
            in_data = False
        lines.append(line)
    if name is not None:
        out[name] = "\n".join(lines).strip()
    return out


def parse_actions(capabilities: str) -> list[ActionOffer]:
    """The client and server actions listed under CAPABILITIES (`- name: description (data: a, b)`)."""
    actions: list[ActionOffer] = []
    for handler in ("client", "server"):
        section = re.search(rf"## \w+ actions \(handler \"{handler}\"\)\n((?:- .*\n?)+)", capabilities)
        for line in (section.group(1).splitlines() if section else []):
            m = re.match(r"- (\w+): (.*?)(?: \(data: (.*)\))?$", line)
            if m:
                params = [p.strip() for p in (m.group(3) or "").split(",") if p.strip()]
                actions.append(ActionOffer(m.group(1), m.group(2), handler, params))
    return actions


def request_context_read(context_section: str) -> dict[str, Any]:
    """The request context as the prompt shows it (best effort: a truncated one yields what regexes find)."""
    m = REQUEST_CONTEXT.search(context_section)
    if not m:
        return {}
    try:
        value = json.loads(data_unescape(m.group(1)))
        return value if isinstance(value, dict) else {}
    except ValueError:
        found: dict[str, Any] = {}
        for key in ("current_page", "active_tab", "entity_type"):
            km = re.search(rf'"{key}": "([\w-]+)"', m.group(1))
            if km:
                found[key] = km.group(1)
        return found


def troubleshooting_read(section: str | None) -> Troubleshooting | None:
    """The error of the TROUBLESHOOTING section (its fields are in a data block), None without the section."""
    if not section:
        return None
    text = data_blocks(section).get("error", section)
    get = {k: (m.group(1).strip() if (m := re.search(rf"^{k}: (.*)$", text, re.M)) else "") for k in ("Message", "Code", "Context")}
    return Troubleshooting(get["Message"], get["Code"], get["Context"])


def context_from_text(system: str) -> PromptContext:
    """The context as the prompt's text gives it."""
    parts = sections(system)
    context = parts.get("CONTEXT", "")
    capabilities = parts.get("CAPABILITIES", "")
    outside = DATA_BLOCKS.sub("", context)  # the titles' lines are outside the page's data
    page_title = m.group(1).strip() if (m := re.search(r"^Page title: (.+)$", outside, re.M)) else ""
    tab_title = m.group(1).strip() if (m := re.search(r"^Tab title: (.+)$", outside, re.M)) else ""
    interaction = m.group(1) if (m := re.search(r"^Interaction type: (\w+)", context, re.M)) else "text_input"
    language = m.group(1).lower() if (m := LANGUAGE_CODE.search(system)) else ""
    return PromptContext(
        context_text=data_blocks(context).get("page", ""), request_context=request_context_read(context),
        interaction=interaction, page_title=page_title, tab_title=tab_title, language=language,
        troubleshooting=troubleshooting_read(parts.get("TROUBLESHOOTING")), payloads=parse_payloads(capabilities),
        actions=parse_actions(capabilities), tool_titles=dict(TOOL_LINE.findall(capabilities)),
    )
