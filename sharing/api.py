"""The sharing API of every kind of object (sharing.kinds): its links and grants.
The views are declared once; `subject_urls` mounts them under each kind's
`<kind>_id` with the kind's URL names. Each view checks the kind's access
(need="own"), calls a service or selector, serializes."""

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from core.pagination import Page, paginated

from . import selectors, services
from .access import request_subject
from .kinds import KINDS
from .serializers import (
    GrantCreateSerializer,
    GrantSerializer,
    LinkCreatedSerializer,
    LinkCreateSerializer,
    LinkSerializer,
    UnversionedLinkCreateSerializer,
)

LINK_CREATE_DOC = ("Owner only. A read-only link (public: anyone; login: signed-in users): open "
                   "url, or send the token as X-Share-Token to the object's API. A prompt's link "
                   "may pin one version; a dataset's reaches its versions, rows and export (runs "
                   "are for accounts). The token is in this response only; we keep its hash.")


class SubjectApi(APIView):
    """A view on one shared object. Signed-out link holders may reach the
    object's other views, so DRF's IsAuthenticated is off: the access check
    decides every call (404 / 403)."""

    permission_classes = [AllowAny]  # as_view(permission_classes=...) by the kind's signed_out_checked
    kind = ""  # set by as_view(kind=...)

    def owned(self, request, kwargs):
        """The object, for its owner (404 / 403 for anyone else), and its keyword."""
        obj = request_subject(request, self.kind, pk=kwargs[f"{self.kind}_id"], need="own")
        return {self.kind: obj}


class LinkListApi(SubjectApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    create_serializer = LinkCreateSerializer

    @extend_schema(responses=LinkSerializer(many=True), description="Owner only.")
    def get(self, request, **kwargs):
        subject = self.owned(request, kwargs)
        return paginated(request, self, selectors.link_list(**subject), ("-created_at",),
                         lambda items: LinkSerializer(items, many=True).data)

    @extend_schema(request=LinkCreateSerializer, responses={201: LinkCreatedSerializer},
                   description=LINK_CREATE_DOC)
    def post(self, request, **kwargs):
        subject = self.owned(request, kwargs)
        data = self.create_serializer(data=request.data, context={"kind": self.kind})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        link, token = services.link_create(actor=request.user, mode=v["mode"], name=v["name"],
                                           version_id=v["version"], expires_at=v["expires_at"],
                                           role=v["role"], **subject)
        body = LinkSerializer(link).data | {"token": token, "url": request.build_absolute_uri(f"/s/{token}")}
        return Response(body, status=status.HTTP_201_CREATED)


class UnversionedLinkListApi(LinkListApi):
    """The links of a kind without versions: its schema has no `version`."""

    create_serializer = UnversionedLinkCreateSerializer

    @extend_schema(request=UnversionedLinkCreateSerializer, responses={201: LinkCreatedSerializer},
                   description=LINK_CREATE_DOC)
    def post(self, request, **kwargs):
        return super().post(request, **kwargs)


class LinkDetailApi(SubjectApi):
    @extend_schema(responses={200: LinkSerializer}, description="Revoke (owner only); idempotent.")
    def delete(self, request, link_id, **kwargs):
        link = services.link_revoke(link_id=link_id, actor=request.user, **self.owned(request, kwargs))
        return Response(LinkSerializer(link).data)


class GrantListApi(SubjectApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers

    @extend_schema(responses=GrantSerializer(many=True), description="Owner only.")
    def get(self, request, **kwargs):
        subject = self.owned(request, kwargs)
        return paginated(request, self, selectors.grant_list(**subject), ("-created_at", "-id"),
                         lambda items: GrantSerializer(items, many=True).data)

    @extend_schema(request=GrantCreateSerializer, responses={201: GrantSerializer},
                   description="Owner only. Grant to `username` or to `team` (id, a team you are in) as "
                               "viewer or editor; a second grant to the same grantee changes its role.")
    def post(self, request, **kwargs):
        subject = self.owned(request, kwargs)
        data = GrantCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        grant = services.grant_create(actor=request.user, role=v["role"], username=v["username"],
                                      team_id=v["team"], expires_at=v["expires_at"], **subject)
        return Response(GrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class GrantDetailApi(SubjectApi):
    @extend_schema(responses={200: GrantSerializer}, description="Revoke (owner only); idempotent.")
    def delete(self, request, grant_id, **kwargs):
        grant = services.grant_revoke(grant_id=grant_id, actor=request.user, **self.owned(request, kwargs))
        return Response(GrantSerializer(grant).data)


def subject_urls(kind_name: str) -> list:
    """The links and grants URLs of one kind, relative to its objects' root
    (`<uuid:prompt_id>/links`, ...), named by the kind's `url_name`."""
    kind = KINDS[kind_name]
    obj = f"<uuid:{kind.name}_id>"
    link_list = LinkListApi if kind.version_model else UnversionedLinkListApi
    mount = {"kind": kind.name, "permission_classes":
             [AllowAny] if kind.signed_out_checked else api_settings.DEFAULT_PERMISSION_CLASSES}
    return [
        path(f"{obj}/{route}", view.as_view(**mount), name=kind.url_name.format(name))
        for route, view, name in [("links", link_list, "links"),
                                  ("links/<uuid:link_id>", LinkDetailApi, "link"),
                                  ("grants", GrantListApi, "grants"),
                                  ("grants/<int:grant_id>", GrantDetailApi, "grant")]
    ]
