"""Browser page routes (the REST API lives in playground/urls.py)."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.prompt_list, name="prompt-list"),
    path("shared/", views.shared_with_me_page, name="shared-with-me"),
    path("<uuid:prompt_id>/", views.playground, name="prompt-playground"),
    path("<uuid:prompt_id>/history/", views.history, name="prompt-history"),
]
