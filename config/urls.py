from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import TemplateView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts import urls as accounts_urls
from chat import urls as chat_urls
from core.blob_views import blob_local
from core.errors import api_not_found
from evals import page_urls as eval_pages
from evals import urls as eval_urls
from generations import urls as generation_urls
from inference_client import urls as inference_urls
from playground import urls as playground_urls
from playground import views as playground_views

from .health import healthz

api_patterns = [
    path("accounts/", include(accounts_urls.api_urls)),
    path("chat/", include(chat_urls.api_urls)),
    # The local object store's stand-in for presigned URLs (embedded default).
    path("prompts/blobs/local/<str:token>", blob_local, name="blob-local"),
    path("prompts/", include("playground.urls")),
    path("prompts/", include(eval_urls.gate_urls)),
    path("", include("webhooks.urls")),
    path("prompts/", include(inference_urls.prompt_run_urls)),
    path("prompts/", include(generation_urls.prompt_urls)),
    path("generations/", include(generation_urls.generation_urls)),
    path("runs/", include(playground_urls.run_urls)),
    path("playground/", include(playground_urls.scratch_urls)),
    path("playground/", include(inference_urls.scratch_run_urls)),
    path("", include(inference_urls.estimate_urls)),
    path("runs/", include(eval_urls.run_case_urls)),
    path("datasets/", include(eval_urls.dataset_urls)),
    path("evals/", include(eval_urls.eval_urls)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("v1/", include("inference_client.urls")),
    path("metrics", include("inference_client.metrics_urls")),
    # Anything else under /api/ or /v1/ is a JSON 404, never an HTML page.
    re_path(r"^(api|v1)/", api_not_found),
    path("", include(accounts_urls.pages)),
    path("", include(inference_urls.pages_urls)),
    path("chat/", include(chat_urls.pages)),
    path("prompts/", include("playground.page_urls")),
    path("prompts/", include(generation_urls.pages)),
    path("prompts/", include(eval_pages.prompt_pages)),
    path("playground/", playground_views.scratch_playground, name="scratch-playground"),
    path("runs/<str:run_id>/", playground_views.run_permalink, name="run-permalink"),
    path("evals/", include("evals.page_urls")),
    # Share-link page (/s/<token>) and "shared with me" (/prompts/shared/).
    path("", include("sharing.pages")),
    path("", include("webhooks.pages")),
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
]

handler404 = "core.errors.handler404"
handler500 = "core.errors.handler500"
