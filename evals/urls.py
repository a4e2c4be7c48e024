from django.urls import path

from sharing.api import subject_urls

from . import api, api_gate, api_online, api_pins, api_results, api_run_cases, api_runs
from .permissions import DATASET

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
    *subject_urls(DATASET.name),
]

# A prompt's gates, pinned dataset and online evaluation, under /api/prompts/ beside playground.urls.
L = "<uuid:prompt_id>/labels/<str:name>"
gate_urls = [
    path("<uuid:prompt_id>/gates", api_gate.PromptGateListApi.as_view(), name="api-prompt-gates"),
    path(f"{L}/gate", api_gate.LabelGateApi.as_view(), name="api-label-gate"),
    path(f"{L}/gate/decisions", api_gate.LabelGateDecisionsApi.as_view(), name="api-label-gate-decisions"),
    path(f"{L}/gate/runs", api_gate.LabelGateRunsApi.as_view(), name="api-label-gate-runs"),
    path("<uuid:prompt_id>/eval-pin", api_pins.PromptPinApi.as_view(), name="api-prompt-eval-pin"),
    path("<uuid:prompt_id>/versions/<str:version_id>/eval-deltas", api_pins.VersionDeltasApi.as_view(),
         name="api-version-eval-deltas"),
    path("<uuid:prompt_id>/online-evals", api_online.OnlineEvalListApi.as_view(), name="api-online-evals"),
    path("<uuid:prompt_id>/online-evals/<str:rule_id>", api_online.OnlineEvalDetailApi.as_view(),
         name="api-online-eval"),
    path("<uuid:prompt_id>/versions/<str:version_id>/online-scores",
         api_online.VersionOnlineScoresApi.as_view(), name="api-version-online-scores"),
]

eval_urls = [
    path("evaluators", api_runs.EvaluatorListApi.as_view(), name="api-evaluators"),
    path("runs", api_runs.EvalRunListApi.as_view(), name="api-eval-runs"),
    path("runs/<uuid:run_id>", api_runs.EvalRunDetailApi.as_view(), name="api-eval-run"),
    path("runs/<uuid:run_id>/cancel", api_runs.EvalRunCancelApi.as_view(), name="api-eval-run-cancel"),
    path("runs/<uuid:run_id>/results", api_results.EvalResultsApi.as_view(), name="api-eval-run-results"),
]

# A playground run saved as a test case, under /api/runs/ beside playground.urls.run_urls.
run_case_urls = [
    path("<str:run_id>/test-case", api_run_cases.RunTestCaseApi.as_view(), name="api-run-test-case"),
]
