from django.urls import path

from sharing.api import subject_urls

from . import api, api_export, api_labels, api_sharing
from .shares import PROMPT

V = "<uuid:prompt_id>/versions/<str:version_id>"
L = "<uuid:prompt_id>/labels/<str:name>"

urlpatterns = [
    path("", api.PromptListApi.as_view(), name="api-prompts"),
    path("shared", api_sharing.SharedWithMeApi.as_view(), name="api-prompts-shared"),
    path("transfers", api_sharing.TransferOfferListApi.as_view(), name="api-prompt-transfers"),
    path("transfers/<int:offer_id>", api_sharing.TransferOfferApi.as_view(), name="api-transfer-offer"),
    path("<uuid:prompt_id>", api.PromptDetailApi.as_view(), name="api-prompt"),
    path("<uuid:prompt_id>/versions", api.VersionListApi.as_view(), name="api-versions"),
    path(V, api.VersionDetailApi.as_view(), name="api-version"),
    path(f"{V}/body", api.VersionBodyApi.as_view(), name="api-version-body"),
    path(f"{V}/render", api.VersionRenderApi.as_view(), name="api-version-render"),
    path(f"{V}/export", api_export.VersionExportApi.as_view(), name="api-version-export"),
    path("<uuid:prompt_id>/tree", api.TreeApi.as_view(), name="api-prompt-tree"),
    path("<uuid:prompt_id>/heads", api.HeadsApi.as_view(), name="api-prompt-heads"),
    path("<uuid:prompt_id>/diff", api.DiffApi.as_view(), name="api-prompt-diff"),
    path("<uuid:prompt_id>/merge", api.MergePreviewApi.as_view(), name="api-prompt-merge"),
    path("<uuid:prompt_id>/uploads", api.UploadApi.as_view(), name="api-prompt-uploads"),
    path("<uuid:prompt_id>/labels", api_labels.LabelListApi.as_view(), name="api-labels"),
    path(L, api_labels.LabelDetailApi.as_view(), name="api-label"),
    path(f"{L}/move", api_labels.LabelMoveApi.as_view(), name="api-label-move"),
    path(f"{L}/split", api_labels.LabelSplitApi.as_view(), name="api-label-split"),
    path(f"{L}/protect", api_labels.LabelProtectApi.as_view(), name="api-label-protect"),
    path(f"{L}/pending", api_labels.PendingListApi.as_view(), name="api-label-pending"),
    path(f"{L}/pending/<int:pending_id>/approve", api_labels.PendingApproveApi.as_view(),
         name="api-label-pending-approve"),
    path(f"{L}/pending/<int:pending_id>/reject", api_labels.PendingRejectApi.as_view(),
         name="api-label-pending-reject"),
    path(f"{L}/undo", api_labels.LabelUndoApi.as_view(), name="api-label-undo"),
    path(f"{L}/redo", api_labels.LabelRedoApi.as_view(), name="api-label-redo"),
    path(f"{L}/history", api_labels.LabelHistoryApi.as_view(), name="api-label-history"),
    *subject_urls(PROMPT.name),
    path("<uuid:prompt_id>/transfer", api_sharing.TransferApi.as_view(), name="api-prompt-transfer"),
    path("<uuid:prompt_id>/fork", api_sharing.ForkApi.as_view(), name="api-prompt-fork"),
    path("<uuid:prompt_id>/audit", api_sharing.AuditListApi.as_view(), name="api-prompt-audit"),
]
