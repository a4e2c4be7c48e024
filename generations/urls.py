"""/api routes of the generations log (generations/api.py) and its page."""

from django.urls import path

from core.routes import api_routes

from . import api, api_alerts, views

prompt_urls = api_routes(
    ("<str:prompt_id>/generations", api.GenerationListApi, "api-generation-list"),
    ("<str:prompt_id>/versions/<str:version_id>/generation-metrics", api.VersionMetricsApi,
     "api-generation-metrics"),
    ("<str:prompt_id>/alerts", api_alerts.AlertListApi, "api-alert-list"),
    ("<str:prompt_id>/alerts/<str:alert_id>/rollback", api_alerts.AlertRollbackApi, "api-alert-rollback"),
    ("<str:prompt_id>/alerts/<str:alert_id>/dismiss", api_alerts.AlertDismissApi, "api-alert-dismiss"),
)

generation_urls = api_routes(
    ("<str:generation_id>", api.GenerationDetailApi, "api-generation"),
    ("<str:generation_id>/output", api.GenerationOutputApi, "api-generation-output"),
    ("<str:generation_id>/test-case", api.GenerationTestCaseApi, "api-generation-test-case"),
)

pages = [
    path("<uuid:prompt_id>/versions/<uuid:version_id>/generations/", views.version_generations,
         name="version-generations"),
]
