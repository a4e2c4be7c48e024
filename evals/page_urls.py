"""Browser page routes for evaluations (the REST API lives in evals/urls.py)."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.evals_home, name="evals-home"),
    path("datasets/<uuid:dataset_id>/", views.dataset_page, name="evals-dataset"),
    path("runs/<uuid:run_id>/", views.run_page, name="evals-run"),
]

# Under /prompts/, beside playground.page_urls.
prompt_pages = [
    path("<uuid:prompt_id>/online-evals/", views.online_evals_page, name="prompt-online-evals"),
]
