from django.urls import path

from inference_client import batch_views, estimates, pages, playground_runs, prompt_runs, views
from inference_client.control import pages as control_pages

urlpatterns = [
    path("chat/completions", views.chat_completions, name="v1-chat-completions"),
    path("completions", views.completions, name="v1-completions"),
    path("embeddings", views.embeddings, name="v1-embeddings"),
    path("files", batch_views.FileListApi.as_view(), name="v1-files"),
    path("files/<str:file_id>", batch_views.FileDetailApi.as_view(), name="v1-file"),
    path("files/<str:file_id>/content", batch_views.FileContentApi.as_view(), name="v1-file-content"),
    path("batches", batch_views.BatchListApi.as_view(), name="v1-batches"),
    path("batches/<str:batch_id>", batch_views.BatchDetailApi.as_view(), name="v1-batch"),
    path("batches/<str:batch_id>/cancel", batch_views.BatchCancelApi.as_view(), name="v1-batch-cancel"),
    path("models", views.ModelListApi.as_view(), name="v1-models"),
    path("models/<str:model>", views.ModelDetailApi.as_view(), name="v1-model-detail"),
    path("usage", views.UsageApi.as_view(), name="v1-usage"),
]

# Runs of saved prompt versions (mounted under /api/prompts/ by config/urls.py:
# the playground app does not import the gateway).
V = "<uuid:prompt_id>/versions/<str:version_id>"
L = "<uuid:prompt_id>/labels/<str:name>"
prompt_run_urls = [
    path(f"{V}/run", prompt_runs.version_run, name="api-version-run"),
    path(f"{L}/run", prompt_runs.label_run, name="api-label-run"),
    path("<uuid:prompt_id>/run", playground_runs.playground_run, name="api-prompt-run"),
]
# The scratch playground's runs (no prompt yet), mounted at /api/playground/.
scratch_run_urls = [path("run", playground_runs.playground_run, name="api-scratch-run")]
estimate_urls = [path("estimate", estimates.EstimateApi.as_view(), name="api-estimate"),
                 path("evals/estimate", estimates.EvalEstimateApi.as_view(), name="api-eval-estimate")]

pages_urls = [
    path("settings/api-keys/", pages.api_keys, name="api-keys"),
    path("control/", control_pages.control_page, name="control"),
    path("control/action", control_pages.control_action, name="control-action"),
]
