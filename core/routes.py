"""URL tables of class-based API views: one row a route."""

from django.urls import URLPattern, path
from django.views import View


def api_routes(*rows: tuple[str, type[View], str]) -> list[URLPattern]:
    """`(route, view class, url name)` rows as Django paths to each view's `as_view()`."""
    return [path(route, view.as_view(), name=name) for route, view, name in rows]
