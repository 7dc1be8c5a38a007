"""The user's attachments over HTTP: upload one, read its file or thumbnail, remove an unsent one."""
from __future__ import annotations

from typing import Any

from django.http import FileResponse, HttpResponse, HttpResponseBase, JsonResponse
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.views import APIView

from chat import selectors, services
from chat.api.auth import Authenticated
from chat.api.errors import ErrorMapped, error
from chat.api.openapi import error_responses, operation
from chat.api.serializers import AttachmentSerializer, AttachmentUploadSerializer
from chat.conf import chat_settings
from chat.userdata import attachments, blocks

ATTACHMENT_ID = OpenApiParameter("attachment_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="the attachment's id")
UPLOAD_OVERHEAD = 64 * 1024  # multipart headers and boundaries around the file




class AttachmentView(Authenticated, ErrorMapped, APIView):
    """The user's own attachments; anyone else's id gets the same `not_found` as a missing one."""

    error_frames = True
    schema = AutoSchema()


def file_response(att: Any, field: Any, *, content_type: str, download: bool) -> FileResponse:
    """The stored bytes with the sniffed type; never rendered as a page (nosniff, a sandboxing CSP)."""
    response = FileResponse(field.open("rb"), content_type=content_type, as_attachment=download, filename=att.name)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=3600"
    return response


class AttachmentUploadView(AttachmentView):
    parser_classes = [MultiPartParser]

    @operation(summary="Upload an attachment (an image or a PDF) to send with a message", tags=["attachments"],
               request={"multipart/form-data": AttachmentUploadSerializer},
               responses={201: AttachmentSerializer, **error_responses("bad_frame", "too_large", "unsupported_type", "rate_limited")})
    def post(self, request: Request) -> HttpResponse:
        """POST <api>attachments/ (multipart, field `file`): the user's unsent attachment, judged by its bytes."""
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > chat_settings.CHAT_MAX_ATTACHMENT_BYTES + UPLOAD_OVERHEAD:  # refused before reading it
            return error("too_large", f"The file is larger than {chat_settings.CHAT_MAX_ATTACHMENT_BYTES} bytes.")
        upload = request.FILES.get("file")
        if upload is None:
            return error("bad_frame", "send the file as the multipart field `file`")
        att = services.attachment_upload(user=request.user, upload=upload)
        return JsonResponse(blocks.attachment_data(att), status=201)


class AttachmentFileView(AttachmentView):
    @operation(summary="An attachment's file (its owner only)", tags=["attachments"], parameters=[ATTACHMENT_ID],
               responses={(200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The file, with its type"),
                          **error_responses("not_found")})
    def get(self, request: Request, attachment_id: str) -> HttpResponseBase:
        """GET <api>attachments/<id>/: the file; images inline, PDFs as a download."""
        att = selectors.attachment_get(user=request.user, attachment_id=attachment_id)
        if att is None:
            return error("not_found", "attachment not found")
        return file_response(att, att.file, content_type=att.content_type, download=att.content_type == attachments.PDF)

    @operation(summary="Remove an attachment not sent yet", tags=["attachments"], parameters=[ATTACHMENT_ID],
               responses={204: None, **error_responses("not_found")})
    def delete(self, request: Request, attachment_id: str) -> HttpResponse:
        """DELETE <api>attachments/<id>/: an unsent upload goes (a sent one stays with its message: `not_found`)."""
        services.attachment_discard(user=request.user, attachment_id=attachment_id)
        return HttpResponse(status=204)


class AttachmentThumbnailView(AttachmentView):
    @operation(summary="An image attachment's thumbnail (its owner only)", tags=["attachments"], parameters=[ATTACHMENT_ID],
               responses={(200, "image/jpeg"): OpenApiResponse(OpenApiTypes.BINARY, description="A JPEG at most 320 pixels wide and high"),
                          **error_responses("not_found")})
    def get(self, request: Request, attachment_id: str) -> HttpResponseBase:
        """GET <api>attachments/<id>/thumbnail/: a small JPEG of an image (a PDF has none: `not_found`)."""
        att = selectors.attachment_get(user=request.user, attachment_id=attachment_id)
        if att is None or not att.thumbnail:
            return error("not_found", "attachment not found")
        return file_response(att, att.thumbnail, content_type="image/jpeg", download=False)
