"""`manage.py check` for the engine's settings (chat/conf.py): wrong values are errors before anything runs.

- chat.E001  a setting has the wrong type
- chat.E002  a number is negative (or zero where zero makes no sense)
- chat.E003  CHAT_PROVIDER (or CHAT_EVAL_JUDGE_PROVIDER) does not import
- chat.E004  CHAT_PROVIDER (or CHAT_EVAL_JUDGE_PROVIDER) is not a chat.providers.base.Provider subclass
- chat.E005  CHAT_RUN_LOG_BACKEND does not import or is not a chat.runs.log.RunLog subclass
- chat.E006  the Redis run log without a Redis URL (CHAT_REDIS_URL / REDIS_URL)
- chat.E007  the provider's own settings are incomplete (e.g. `openai` without OPENAI_API_KEY or OPENAI_BASE_URL)
- chat.E008  CHAT_PRICES is not a dict of model -> {input, output, cache_read, cache_write} numbers
- chat.E009  an offline model intent is registered twice (chat.providers.offline.intents; the second is ignored)
- chat.W001  a CHAT_* setting the engine does not know (a typo?)
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from django.apps import AppConfig
from django.conf import settings as django_settings
from django.core.checks import CheckMessage, Error, Warning, register
from django.utils.module_loading import import_string

from chat.conf import PROVIDER_ALIASES, ChatSettings, Setting, chat_settings
from chat.infra.registration import duplicate_errors
from chat.providers.base import Provider
from chat.providers.offline import intents as offline_intents
from chat.quotas.costs import prices_problems
from chat.runs.log import RedisRunLog, RunLog


def _type_ok(spec: Setting, value: Any) -> bool:
    kinds = get_args(spec.kind) or (spec.kind,)
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return isinstance(value, tuple(k for k in kinds if isinstance(k, type)))


def _type_name(spec: Setting) -> str:
    return " or ".join("None" if k is type(None) else k.__name__ for k in (get_args(spec.kind) or (spec.kind,)))


def _subclass_error(path: str, setting: str, base: type, ids: tuple[str, str]) -> Error | None:
    try:
        obj = import_string(path)
    except ImportError as exc:
        hint = "Use an alias or a dotted path to a class." if setting not in ("CHAT_PROVIDER", "CHAT_EVAL_JUDGE_PROVIDER") else (
            f"Use one of {', '.join(sorted(PROVIDER_ALIASES))} or a dotted path to a Provider subclass.")
        return Error(f"{setting} {path!r} does not import: {exc}", hint=hint, id=ids[0])
    if not (isinstance(obj, type) and issubclass(obj, base)):
        return Error(f"{setting} {path!r} is not a {base.__module__}.{base.__qualname__} subclass.", id=ids[1])
    return None


@register()
def check_chat_settings(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """Every CHAT_* setting a project set: type, range, and that the classes named exist."""
    errors: list[CheckMessage] = []
    specs = ChatSettings.specs()
    for name, spec in specs.items():
        raw = getattr(django_settings, name, None)
        if raw is None:
            continue  # the default
        if not _type_ok(spec, raw):
            errors.append(Error(f"{name} must be {_type_name(spec)}, not {type(raw).__name__} ({raw!r}).", id="chat.E001"))
            continue
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            if spec.positive and raw <= 0:
                errors.append(Error(f"{name} must be greater than 0, not {raw!r}.", hint=spec.help, id="chat.E002"))
            elif spec.minimum is not None and raw < spec.minimum:
                errors.append(Error(f"{name} must not be negative, not {raw!r}.", hint=spec.help, id="chat.E002"))
    if not any(e.id == "chat.E001" and "CHAT_PROVIDER " in e.msg for e in errors):
        found = _subclass_error(chat_settings.CHAT_PROVIDER, "CHAT_PROVIDER", Provider, ("chat.E003", "chat.E004"))
        errors += [found] if found else []
        if found is None:
            provider_cls: type[Provider] = import_string(chat_settings.CHAT_PROVIDER)
            errors += [Error(problem, hint="See the README's provider configuration table.", id="chat.E007")
                       for problem in provider_cls.check_settings(chat_settings)]
    judge = chat_settings.CHAT_EVAL_JUDGE_PROVIDER
    if judge and not any(e.id == "chat.E001" and "CHAT_EVAL_JUDGE_PROVIDER " in e.msg for e in errors):
        found = _subclass_error(PROVIDER_ALIASES.get(judge, judge), "CHAT_EVAL_JUDGE_PROVIDER", Provider, ("chat.E003", "chat.E004"))
        errors += [found] if found else []
    if not any(e.id == "chat.E001" and "CHAT_RUN_LOG_BACKEND " in e.msg for e in errors):
        backend = chat_settings.CHAT_RUN_LOG_BACKEND
        found = _subclass_error(backend, "CHAT_RUN_LOG_BACKEND", RunLog, ("chat.E005", "chat.E005"))
        errors += [found] if found else []
        if found is None and issubclass(import_string(backend), RedisRunLog) and not chat_settings.CHAT_REDIS_URL:
            errors.append(Error("CHAT_RUN_LOG_BACKEND is the Redis run log but no Redis URL is set.",
                                hint="Set CHAT_REDIS_URL (or REDIS_URL), or use the `memory` backend.", id="chat.E006"))
    if not any(e.id == "chat.E001" and "CHAT_PRICES " in e.msg for e in errors):
        errors += [Error(problem, hint="USD per million tokens, e.g. {'gpt-4.1-mini': {'input': 0.4, 'output': 1.6}}.", id="chat.E008")
                   for problem in prices_problems(chat_settings.CHAT_PRICES)]
    for name in dir(django_settings):
        if name.startswith("CHAT_") and name not in specs:
            errors.append(Warning(f"{name} is not a setting of the chat engine (a typo?).",
                                  hint=f"Known settings: {', '.join(n for n in specs if n.startswith('CHAT_'))}.", id="chat.W001"))
    return errors


@register()
def check_offline_intents(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """An offline model intent name registered twice: reported as the registries of tools, payload types and pages do."""
    return duplicate_errors(offline_intents, "offline model intent", hint="Intent names are global: rename one of them.", id="chat.E009")
