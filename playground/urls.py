from core.routes import api_routes
from sharing.api import subject_urls

from . import api, api_export, api_labels, api_portability, api_runs, api_scratch, api_sharing
from .shares import PROMPT

P = "<uuid:prompt_id>"
V = f"{P}/versions/<str:version_id>"
L = f"{P}/labels/<str:name>"

urlpatterns = [
    *api_routes(
        ("",                         api.PromptListApi,                "api-prompts"),
        ("shared",                   api_sharing.SharedWithMeApi,      "api-prompts-shared"),
        ("transfers",                api_sharing.TransferOfferListApi, "api-prompt-transfers"),
        ("transfers/<int:offer_id>", api_sharing.TransferOfferApi,     "api-transfer-offer"),
        ("import",                   api_portability.HistoryImportApi, "api-prompt-import"),
        (P,                          api.PromptDetailApi,              "api-prompt"),
        (f"{P}/versions",            api.VersionListApi,               "api-versions"),
        (V,                          api.VersionDetailApi,             "api-version"),
        (f"{V}/body",                api.VersionBodyApi,               "api-version-body"),
        (f"{V}/render",              api.VersionRenderApi,             "api-version-render"),
        (f"{V}/export",              api_export.VersionExportApi,      "api-version-export"),
        (f"{P}/tree",                api.TreeApi,                      "api-prompt-tree"),
        (f"{P}/heads",               api.HeadsApi,                     "api-prompt-heads"),
        (f"{P}/diff",                api.DiffApi,                      "api-prompt-diff"),
        (f"{P}/diff/fields",         api.FieldDiffApi,                 "api-prompt-diff-fields"),
        (f"{P}/merge",               api.MergePreviewApi,              "api-prompt-merge"),
        (f"{P}/uploads",             api.UploadApi,                    "api-prompt-uploads"),
        (f"{P}/history-export",      api_portability.HistoryExportApi, "api-prompt-history-export"),
        (f"{P}/runs",                api_runs.RunListApi,              "api-prompt-runs"),
    ),
    *api_routes(
        (f"{P}/labels",                            api_labels.LabelListApi,      "api-labels"),
        (L,                                        api_labels.LabelDetailApi,    "api-label"),
        (f"{L}/move",                              api_labels.LabelMoveApi,      "api-label-move"),
        (f"{L}/split",                             api_labels.LabelSplitApi,     "api-label-split"),
        (f"{L}/protect",                           api_labels.LabelProtectApi,   "api-label-protect"),
        (f"{L}/pending",                           api_labels.PendingListApi,    "api-label-pending"),
        (f"{L}/pending/<int:pending_id>/approve",  api_labels.PendingApproveApi, "api-label-pending-approve"),
        (f"{L}/pending/<int:pending_id>/reject",   api_labels.PendingRejectApi,  "api-label-pending-reject"),
        (f"{L}/undo",                              api_labels.LabelUndoApi,      "api-label-undo"),
        (f"{L}/redo",                              api_labels.LabelRedoApi,      "api-label-redo"),
        (f"{L}/history",                           api_labels.LabelHistoryApi,   "api-label-history"),
    ),
    *subject_urls(PROMPT.name),
    *api_routes(
        (f"{P}/transfer", api_sharing.TransferApi,  "api-prompt-transfer"),
        (f"{P}/fork",     api_sharing.ForkApi,      "api-prompt-fork"),
        (f"{P}/audit",    api_sharing.AuditListApi, "api-prompt-audit"),
    ),
]

# One playground run (its permalink), mounted at /api/runs/ by config/urls.py.
run_urls = api_routes(("<str:run_id>", api_runs.RunDetailApi, "api-run"))

# The scratch playground, mounted at /api/playground/ by config/urls.py (its runs: inference_client).
scratch_urls = api_routes(
    ("draft", api_scratch.ScratchDraftApi,   "api-scratch-draft"),
    ("runs",  api_scratch.ScratchRunListApi, "api-scratch-runs"),
    ("save",  api_scratch.ScratchSaveApi,    "api-scratch-save"),
)
