"""The one page shape of the JSON API's lists: a cursor page (`next`, `previous`,
`results`) of at most `page_size` items, ordered by the view's keys."""

import copy
from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, QueryDict
from django.utils.http import urlencode
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class Page(CursorPagination):
    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"

    def __init__(self, ordering: Sequence[str] | None = None) -> None:
        # None: drf-spectacular's instance, for the schema only.
        self.ordering = ordering  # type: ignore[assignment]  # DRF's stub says str; it takes a tuple too


def paginated(request: Request, view: APIView, queryset: QuerySet[Any], ordering: Sequence[str],
              serialize: Callable[[list[Any]], Any]) -> Response:
    """One page of `queryset` in `ordering`, each item serialized by `serialize`."""
    page = Page(ordering)
    items = page.paginate_queryset(queryset, request, view=view) or []
    return page.get_paginated_response(serialize(items))


def first_page(request: HttpRequest, path: str, queryset: QuerySet[Any], ordering: Sequence[str],
               serialize: Callable[[list[Any]], Any], page_size: int) -> dict[str, Any]:
    """The first page of `queryset` as GET `path`?page_size=N answers it (its `next` link
    included), for a page that carries it in its HTML: one round trip fewer."""
    query = urlencode({"page_size": page_size})
    listing = copy.copy(request)
    listing.path = listing.path_info = path
    listing.GET = QueryDict(query)
    listing.META = {**request.META, "PATH_INFO": path, "QUERY_STRING": query}
    page = Page(ordering)
    items = page.paginate_queryset(queryset, Request(listing)) or []
    return {"next": page.get_next_link(), "previous": None, "results": serialize(items)}
