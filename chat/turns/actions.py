"""A clicked server action's handler, run as the user (the turn answers with its result), and its Close button."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ObjectDoesNotExist, ValidationError as DjangoValidationError
from django.db import transaction
from django.utils.translation import gettext
from pydantic import ValidationError

from chat.events.errors import Forbidden
from pages.access import access_for, server_action_denied
from pages.registry import ActionFailed, ServerAction, ServerActionResult

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)


def close_button() -> dict[str, Any]:
    """The Close button under a server action's result, labelled in the turn's language."""
    return {"label": gettext("Close"), "action": "close", "handler": "client", "style": "secondary"}


def action_run(spec: ServerAction, data: Any, user: User, context: dict[str, Any]) -> ServerActionResult:
    """The handler as the user, in a transaction: an ActionFailed or any error rolls its writes back and is answered,
    not raised. Its permissions are checked again (admission checked them; staff may have just withdrawn them)."""
    if server_action_denied(access_for(user), spec) is not None:
        raise Forbidden("You do not have permission to run this action.")
    handler = spec.handler
    try:
        with transaction.atomic():
            result = handler(data if isinstance(data, dict) else {"value": data}, user, context)
    except ActionFailed as exc:
        return ServerActionResult(message=gettext("✗ %(reason)s Nothing was changed.") % {"reason": exc.message}, suggested_actions=[close_button()],
                                  ok=False)
    except (ValidationError, DjangoValidationError, ValueError, ObjectDoesNotExist) as exc:
        log.info("server action %s refused its data: %s", getattr(handler, "__name__", handler), exc)
        return ServerActionResult(message=gettext("✗ The action could not use this data. Nothing was changed."),
                                  suggested_actions=[close_button()], ok=False)
    except Exception:
        log.exception("server action %s failed", getattr(handler, "__name__", handler))
        return ServerActionResult(message=gettext("✗ The action failed. Nothing was changed."), suggested_actions=[close_button()], ok=False)
    if not isinstance(result, ServerActionResult):
        log.error("server action %s returned %r, not a ServerActionResult", getattr(handler, "__name__", handler), type(result))
        return ServerActionResult(message=gettext("✗ The action failed. Nothing was changed."), suggested_actions=[close_button()], ok=False)
    return result
