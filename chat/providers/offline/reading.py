"""How the offline model reads a request: the system prompt's sections (the page's context, the request context,
troubleshooting, capabilities), the user's words without filler, and what it said earlier in the conversation."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from chat.infra.registration import title_shown
from chat.providers.base import ProviderRequest
from chat.providers.offline.languages import glossary

# Words that carry no subject: grammar, politeness, and the vocabulary of asking ("can you propose ...").
STOPWORDS = frozenset(
    """a an the and or but nor of for to in on at by with about from into onto me my mine i i'm im am you your yours we
    our ours us it it's its is are was were be been being can could would should will shall may might must please
    help want wanted need needs like let lets let's show give find get tell what which who whom whose how why when
    where some any this that these those do does did doing done more most new make create up out all there here as
    if so just also now then than them they their theirs his her hers him she he have has had not no yes ok okay
    focus focused based around regarding propose proposal suggest suggestion suggestions idea ideas hi hello hey
    thanks thank thx good great nice cool sure yeah yep one ones something anything thing things stuff bit lot very
    really quite maybe perhaps kind sort way ways use using used try trying able else other another own same such
    each every few many much only still too again ever even well back over under via per via look looking see
    seeing current currently already same know think go going put set sets okay alright fine better best worse
    similar related relevant latest recent newest topic topics paper papers""".split()
)
# Words about the page itself ("this tab", "the form"): on a page they point at what is on screen, never a subject.
PAGE_WORDS = frozenset(
    """page pages tab tabs screen here form forms field fields panel section button buttons view window site app
    chat tray assistant bot""".split()
)
# Verbs that ask for a change: only these make the model propose a payload.
CHANGE_WORDS = frozenset(
    """change changes update edit set rename add adding remove delete drop replace improve refine adjust modify tweak
    rewrite write draft generate prepare propose suggest recommend create make build start setup plan new fill
    expand extend broaden narrow tighten reorganize reorganise group categorize categorise analyze analyse assess
    evaluate""".split()
)
QUESTION_WORDS = frozenset("what which who why how when where is are does do did can could explain summarize summarise describe".split())
# a word: a letter, then letters, digits, apostrophes, hyphens (any script: "Ströme", "artículos" are words)
WORD = re.compile(r"[^\W\d_][\w'-]*")


def tokens(text: str) -> list[str]:
    """The words of `text` in order, lower-cased."""
    return [w.lower().strip("'") for w in WORD.findall(text)]


def norm(word: str) -> str:
    """A crude singular ('queries' -> 'query', 'channels' -> 'channel')."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text: str) -> set[str]:
    """Content words of `text`: normalised, no stop-words, no page words, no 1-2 letter tokens."""
    out = set()
    for w in tokens(text):
        for part in w.replace("-", "_").split("_"):
            if len(part) > 2 and part not in STOPWORDS and part not in PAGE_WORDS:
                out.add(norm(part))
    return out


def subject_words(text: str, *, exclude: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """The user's own subject, in their order and spelling: no stop-words, page words, change verbs or `exclude`d words."""
    kept: list[str] = []
    for raw in WORD.findall(text):
        low = raw.lower().strip("'")
        if len(low) < 3 or low in STOPWORDS or low in PAGE_WORDS or low in CHANGE_WORDS or low in QUESTION_WORDS:
            continue
        if norm(low) in exclude or low in exclude:
            continue
        if raw not in kept:
            kept.append(raw)
    return kept


@dataclass
class PayloadOffer:
    """A payload type the page lets the model emit, as its instructions describe it."""

    type: str
    description: str
    marker: str
    example: Any
    instructions: str = ""
    schema: dict[str, Any] = field(default_factory=dict)
    title: str = ""  # what people read for the type (the prompt's `(title: "...")`), else derived from it

    @property
    def shown(self) -> str:
        """The type's title, to say to the user (never its name)."""
        return self.title or title_shown("", self.type)

    def own_words(self) -> set[str]:
        return words(f"{self.type} {self.description} {self.marker}")

    def values_after(self, cue: str) -> list[dict[str, Any]]:
        """The first `SUGGESTED_VALUES: [...]` the instructions give after `cue` (case-insensitive), or []."""
        at = self.instructions.lower().find(cue.lower())
        if at < 0:
            return []
        m = re.search(r"SUGGESTED_VALUES: (\[.*?\])(?=\.|\s|$)", self.instructions[at:])
        if not m:
            return []
        try:
            values = json.loads(m.group(1))
        except ValueError:
            return []
        return [v for v in values if isinstance(v, dict) and "label" in v and "value" in v]

    def enum(self, name: str) -> list[str]:
        """The allowed values of property `name` anywhere in the schema (e.g. a channel's `type`)."""
        found: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                props = node.get("properties")
                if isinstance(props, dict) and isinstance(props.get(name), dict) and "enum" in props[name]:
                    found.extend(str(v) for v in props[name]["enum"] if str(v) not in found)
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(self.schema)
        return found


@dataclass
class ActionOffer:
    name: str
    description: str
    handler: str
    params: list[str] = field(default_factory=list)


@dataclass
class Troubleshooting:
    """The error the page says the user ran into (the prompt's TROUBLESHOOTING section)."""

    message: str
    code: str = ""
    context: str = ""


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


def data_blocks(text: str) -> dict[str, str]:
    """The bodies (unescaped) of the data blocks in `text` by source, the first of each."""
    out: dict[str, str] = {}
    for m in _DATA_BLOCKS.finditer(text):
        out.setdefault(m.group(1), data_unescape(m.group(2)))
    return out


def parse_payloads(capabilities: str) -> list[PayloadOffer]:
    """Payload types offered under CAPABILITIES, with their marker, example and schema."""
    offers: list[PayloadOffer] = []
    for block in re.split(r"\n(?=### )", capabilities):
        block = re.split(r"\n#{1,2} ", block)[0]  # a payload's block ends at the next section
        head = re.match(r'### (\w+)(?: \(title: "([^"]*)"\))?(?: - (.*))?', block)
        example = re.search(r"Example:\n([A-Z][A-Z0-9_]*:)\s*(.+)", block)
        if not (head and example):
            continue
        try:
            data = json.loads(example.group(2))
        except ValueError:
            continue
        schema: dict[str, Any] = {}
        sm = re.search(r"JSON schema: (.+)", block)
        if sm:
            try:
                schema = json.loads(sm.group(1))
            except ValueError:
                schema = {}
        offers.append(PayloadOffer(head.group(1), head.group(3) or "", example.group(1), data, block, schema, head.group(2) or ""))
    return offers


def parse_actions(capabilities: str) -> list[ActionOffer]:
    actions: list[ActionOffer] = []
    for handler in ("client", "server"):
        section = re.search(rf"## \w+ actions \(handler \"{handler}\"\)\n((?:- .*\n?)+)", capabilities)
        for line in (section.group(1).splitlines() if section else []):
            m = re.match(r"- (\w+): (.*?)(?: \(data: (.*)\))?$", line)
            if m:
                params = [p.strip() for p in (m.group(3) or "").split(",") if p.strip()]
                actions.append(ActionOffer(m.group(1), m.group(2), handler, params))
    return actions


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


# the file's name is fenced on the note's line (chat.userdata.attachments); older notes had it bare
ATTACHMENT_NOTE = re.compile(r'^\[Attachment (?:<data source="[^"]*">(.*)</data>|(.+)) \(([\w.+-]+/[\w.+-]+)\): [^\]]*\]$')


def message_text(message: dict[str, Any]) -> str:
    """The text of one provider message (string content or its text blocks; notes about attachments left out)."""
    if isinstance(message.get("content"), str):
        return str(message["content"])
    return " ".join(text for b in _blocks(message) if b.get("type") == "text"
                    and not ATTACHMENT_NOTE.match(text := str(b.get("text", ""))))


def message_attachments(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, content type) of the attachments a user message carries, as blocks or as notes about them."""
    out = []
    for b in _blocks(message):
        if b.get("type") == "text" and (m := ATTACHMENT_NOTE.match(str(b.get("text", "")))):
            out.append((data_unescape(m.group(1)) if m.group(1) is not None else m.group(2), m.group(3)))
        elif b.get("type") in ("image", "document"):
            out.append((str(b.get("title") or b["type"]), str((b.get("source") or {}).get("media_type", ""))))
    return out


@dataclass
class Reading:
    """Everything the offline model understood of one request."""

    request: ProviderRequest

    @cached_property
    def sections(self) -> dict[str, str]:
        return sections(self.request.system)

    @cached_property
    def context_lines(self) -> list[str]:
        """The page's context builder text (the CONTEXT section's page data block)."""
        return [line.rstrip() for line in data_blocks(self.sections.get("CONTEXT", "")).get("page", "").splitlines()]

    @cached_property
    def facts(self) -> list[tuple[str, str]]:
        """`Key: value` lines of the page context, in order: what the page says is on screen."""
        out = []
        for line in self.context_lines:
            m = re.match(r"^-?\s*([A-Z][\w ()/-]{0,40}?): (.+)$", line.strip())
            if m and m.group(2).strip() not in ("(none)", ""):
                out.append((m.group(1).strip(), m.group(2).strip()))
        return out

    @cached_property
    def situation(self) -> str:
        """The page context's first prose line ("The user is editing a research stream, on the RETRIEVAL tab.")."""
        for line in self.context_lines:
            if line.strip() and not re.match(r"^-?\s*[A-Z][\w ()/-]{0,40}?: ", line.strip()):
                return line.strip()
        return ""

    @cached_property
    def request_context(self) -> dict[str, Any]:
        """The request context as the prompt shows it (best effort: a truncated one yields what regexes find)."""
        m = REQUEST_CONTEXT.search(self.sections.get("CONTEXT", ""))
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

    @property
    def page(self) -> str:
        return str(self.request_context.get("current_page") or "")

    @property
    def active_tab(self) -> str:
        return str(self.request_context.get("active_tab") or "")

    @cached_property
    def interaction(self) -> str:
        m = re.search(r"^Interaction type: (\w+)", self.sections.get("CONTEXT", ""), re.M)
        return m.group(1) if m else "text_input"

    @cached_property
    def troubleshooting(self) -> Troubleshooting | None:
        section = self.sections.get("TROUBLESHOOTING")
        if not section:
            return None
        text = data_blocks(section).get("error", section)  # the error's fields are data (chat.prompt.system)
        get = {k: (m.group(1).strip() if (m := re.search(rf"^{k}: (.*)$", text, re.M)) else "") for k in ("Message", "Code", "Context")}
        return Troubleshooting(get["Message"], get["Code"], get["Context"])

    @cached_property
    def payloads(self) -> list[PayloadOffer]:
        return parse_payloads(self.sections.get("CAPABILITIES", ""))

    @cached_property
    def actions(self) -> list[ActionOffer]:
        return parse_actions(self.sections.get("CAPABILITIES", ""))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.request.tools

    @cached_property
    def tool_titles(self) -> dict[str, str]:
        """Tool name -> its title, from the prompt's tool lines (`- name (title: "..."): ...`)."""
        return dict(TOOL_LINE.findall(self.sections.get("CAPABILITIES", "")))

    def tool_title(self, name: str) -> str:
        """What to call the tool `name` when speaking to the user: its title, else one derived from its name."""
        return self.tool_titles.get(name) or title_shown("", name)

    @cached_property
    def page_title(self) -> str:
        """The page's title (the prompt's `Page title:` line outside the page's data), else its name in words."""
        outside = _DATA_BLOCKS.sub("", self.sections.get("CONTEXT", ""))
        m = re.search(r"^Page title: (.+)$", outside, re.M)
        return m.group(1).strip() if m else (title_shown("", self.page) if self.page else "")

    @cached_property
    def tab_title(self) -> str:
        """The active tab's title (the prompt's `Tab title:` line outside the page's data), else its name in words
        through the catalogs; "" without an active tab."""
        if not self.active_tab:
            return ""
        outside = _DATA_BLOCKS.sub("", self.sections.get("CONTEXT", ""))
        m = re.search(r"^Tab title: (.+)$", outside, re.M)
        return m.group(1).strip() if m else title_shown("", self.active_tab)

    @cached_property
    def language(self) -> str:
        """The user's language as the prompt's LANGUAGE section names it ("de"), else ""."""
        m = LANGUAGE_CODE.search(self.request.system)
        return m.group(1).split("-")[0].lower() if m else ""

    @cached_property
    def written_text(self) -> str:
        """The user's last typed (or clicked) message, as they wrote it."""
        for msg in reversed(self.request.messages):
            if msg.get("role") == "user":
                text = message_text(msg)
                if text.strip():
                    return text.strip()
        return ""

    @cached_property
    def user_text(self) -> str:
        """The user's last message as this model reads it: in another language (the prompt's LANGUAGE section), the
        words its glossary knows in English, the rest (the subject, a name) as written (chat/providers/offline/languages.py)."""
        return glossary.gloss(self.written_text, self.language)

    @cached_property
    def attachments(self) -> list[tuple[str, str]]:
        """(name, content type) of the files attached to the request's last user message (not to tool results)."""
        last = self.request.messages[-1] if self.request.messages else {}
        return message_attachments(last) if last.get("role") == "user" else []

    @cached_property
    def user_words(self) -> set[str]:
        return words(self.user_text)

    @cached_property
    def user_tokens(self) -> set[str]:
        return set(tokens(self.user_text)) | {norm(t) for t in tokens(self.user_text)}

    @property
    def asks_change(self) -> bool:
        return bool(self.user_tokens & CHANGE_WORDS)

    @property
    def is_question(self) -> bool:
        toks = tokens(self.user_text)
        return self.user_text.rstrip().endswith("?") or bool(toks and toks[0] in QUESTION_WORDS)

    @cached_property
    def tool_results(self) -> list[dict[str, Any]]:
        last = self.request.messages[-1] if self.request.messages else {}
        return [b for b in _blocks(last) if b.get("type") == "tool_result"]

    @cached_property
    def previous_assistant_text(self) -> str:
        """What the assistant said last, before the user's current message (its raw text, markers included)."""
        seen_user = False
        for msg in reversed(self.request.messages):
            if msg.get("role") == "user" and message_text(msg).strip():
                seen_user = True
                continue
            if seen_user and msg.get("role") == "assistant":
                return message_text(msg)
        return ""

    def last_payload(self) -> tuple[PayloadOffer, Any] | None:
        """The newest payload this page offers that the assistant emitted earlier in the conversation."""
        by_marker = {o.marker: o for o in self.payloads}
        for msg in reversed(self.request.messages):
            if msg.get("role") != "assistant":
                continue
            text = message_text(msg)
            for marker, offer in by_marker.items():
                at = text.rfind(marker)
                if at < 0:
                    continue
                try:
                    data, _ = json.JSONDecoder().raw_decode(text[at + len(marker):].lstrip())
                except ValueError:
                    continue
                return offer, data
        return None

    def tool_names_for(self, ids: list[Any]) -> list[str]:
        names = {b.get("id"): b.get("name") for m in self.request.messages if m.get("role") == "assistant"
                 for b in _blocks(m) if b.get("type") == "tool_use"}
        return [str(names.get(i, "tool")) for i in ids]


# The loop hands tool results to every model inside `<data source="...">` blocks (chat.agent.data.as_data, which
# the agent imports from above this package), and the prompt fences the page's text the same way; the offline model
# reads the text inside. A block's opening and closing lines are exactly these: its text cannot contain them.
DATA_OPEN = re.compile(r'^<data source="[^"]*">$')
DATA_CLOSE = "</data>"
# a tool's line under CAPABILITIES' `## Tools` with its title (chat.prompt.system)
TOOL_LINE = re.compile(r'^- (\S+) \(title: "([^"]*)"\):', re.M)
# the prompt's LANGUAGE section (chat.prompt.system): "The user's language is German (`de`)."
LANGUAGE_CODE = re.compile(r"^The user's language is .*? \(`([A-Za-z0-9-]+)`\)", re.M)
# the prompt's request context line: inside its data block (chat.prompt.system), or plain (older prompts)
REQUEST_CONTEXT = re.compile(r'^Request context:(?: |\n<data source="request_context">\n)(.*)$', re.M)
_DATA_BLOCK = re.compile(r'\A<data source="[^"]*">\n(.*)\n</data>\Z', re.S)
_DATA_BLOCKS = re.compile(r'^<data source="([^"]*)">\n(.*?)\n</data>$', re.S | re.M)
# as_data marks a data tag inside the text with "!" after its "<" (`<!/data>`); the plain ones are read back, as a
# model reads past the mark (encoded or lookalike forms keep it: this model only quotes them)
_ESCAPED_TAG = re.compile(r"<!(\s*/?\s*data)", re.I)
_OLD_ESCAPED_TAG = re.compile(r"<\\(/?data)")  # how text was escaped before (stored tool results)


def data_unescape(text: str) -> str:
    """A data block's text as it was given (best effort: see _ESCAPED_TAG)."""
    return _OLD_ESCAPED_TAG.sub(r"<\1", _ESCAPED_TAG.sub(r"<\1", text))


def data_body(text: str) -> str:
    """The text inside one data block (unescaped), or `text` itself when it is not one."""
    m = _DATA_BLOCK.match(text)
    return data_unescape(m.group(1)) if m else text
