from django.urls import path

from . import api, api_results, api_runs

D = "<uuid:dataset_id>"
V = f"{D}/versions/<str:version_id>"

dataset_urls = [
    path("", api.DatasetListApi.as_view(), name="api-datasets"),
    path(D, api.DatasetDetailApi.as_view(), name="api-dataset"),
    path(f"{D}/versions", api.DatasetVersionListApi.as_view(), name="api-dataset-versions"),
    path(V, api.DatasetVersionDetailApi.as_view(), name="api-dataset-version"),
    path(f"{V}/rows", api.DatasetRowsApi.as_view(), name="api-dataset-rows"),
    path(f"{V}/export", api.DatasetExportApi.as_view(), name="api-dataset-export"),
    path(f"{D}/import", api.DatasetImportApi.as_view(), name="api-dataset-import"),
    path(f"{D}/imports/<uuid:import_id>", api.DatasetImportStatusApi.as_view(),
         name="api-dataset-import-status"),
    path(f"{D}/grants", api.DatasetGrantListApi.as_view(), name="api-dataset-grants"),
    path(f"{D}/grants/<int:grant_id>", api.DatasetGrantDetailApi.as_view(), name="api-dataset-grant"),
    path(f"{D}/links", api.DatasetLinkListApi.as_view(), name="api-dataset-links"),
    path(f"{D}/links/<uuid:link_id>", api.DatasetLinkDetailApi.as_view(), name="api-dataset-link"),
]

eval_urls = [
    path("evaluators", api_runs.EvaluatorListApi.as_view(), name="api-evaluators"),
    path("runs", api_runs.EvalRunListApi.as_view(), name="api-eval-runs"),
    path("runs/<uuid:run_id>", api_runs.EvalRunDetailApi.as_view(), name="api-eval-run"),
    path("runs/<uuid:run_id>/cancel", api_runs.EvalRunCancelApi.as_view(), name="api-eval-run-cancel"),
    path("runs/<uuid:run_id>/results", api_results.EvalResultsApi.as_view(), name="api-eval-run-results"),
]
