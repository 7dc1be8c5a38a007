"""GET/PUT <api>preferences/: the user's own standing instructions for the assistant."""
from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat import selectors, services
from chat.api.auth import Authenticated
from chat.api.bodies import StrictJSONParser
from chat.api.errors import ErrorMapped
from chat.api.openapi import drf_error_responses, operation
from chat.api.serializers import PreferencesSerializer


class PreferencesView(Authenticated, ErrorMapped, APIView):
    """GET/PUT <api>preferences/: the user's own standing instructions for the assistant (ChatGPT's custom instructions)."""

    parser_classes = [StrictJSONParser]
    schema = AutoSchema()

    @operation(summary="The user's preferences: what every answer should take into account", tags=["preferences"],
               responses={200: PreferencesSerializer, **drf_error_responses()})
    def get(self, request: Request) -> Response:
        return Response(PreferencesSerializer(selectors.preferences_get(user=request.user)).data)

    @operation(summary="Set the user's preferences", tags=["preferences"], request=PreferencesSerializer,
               responses={200: PreferencesSerializer, **drf_error_responses(400)})
    def put(self, request: Request) -> Response:
        body = PreferencesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        preferences = services.preferences_update(user=request.user, instructions=body.validated_data["instructions"])
        return Response(PreferencesSerializer(preferences).data)
