"""The one page shape of the JSON API's lists: a cursor page (`next`, `previous`,
`results`) of at most `page_size` items, ordered by the view's keys."""

from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import QuerySet
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
