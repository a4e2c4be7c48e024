"""Label API: get a version by label, compare-and-set moves, undo/redo, history."""


from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.error_codes import DomainError
from core.ids import is_uuid
from core.jsonbody import validated
from core.pagination import Page, paginated

from . import protection, selectors, services
from .api import PromptScopedApi
from .move_checks import label_move_check
from .permissions import request_access
from .serializers import (
    LabelListSerializer,
    LabelMoveRequestSerializer,
    LabelMoveSerializer,
    LabelProtectRequestSerializer,
    LabelSerializer,
    LabelSplitRequestSerializer,
    LabelStepRequestSerializer,
    PendingCreateRequestSerializer,
    PendingDecideRequestSerializer,
    PendingMoveSerializer,
    VersionSerializer,
)
from .splits import MAX_USER_KEY, check_user_key, check_variants, split_pick

LabelWithVersion = inline_serializer("LabelWithVersion", {
    "name": serializers.CharField(), "version": VersionSerializer()})




class LabelListApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=LabelListSerializer(many=True))
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        return paginated(request, self, selectors.label_list_with_last_move(prompt=prompt), ("name",),
                         lambda items: LabelListSerializer(items, many=True).data)


class LabelDetailApi(PromptScopedApi):
    @extend_schema(parameters=[OpenApiParameter("user", {"type": "string", "minLength": 1,
                                                         "maxLength": MAX_USER_KEY}, description=(
        "A split label: pick the version this user key gets (deterministic); without it, the first"))],
        responses=LabelWithVersion, description="The version a label points at; `split` lists a split "
        "label's variants (weights and versions).")
    def get(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        label = selectors.label_get(prompt=prompt, name=name)
        user = check_user_key(request.query_params.get("user"))
        body = {"name": label.name, "updated_at": label.updated_at, "split": None}
        version = label.version
        if label.split:
            versions = {str(v.pk): v for v in selectors.label_split_versions(label=label)}
            body["split"] = [{"weight": v["weight"], "version": VersionSerializer(
                versions[v["version"]], context={"with_body": True}).data} for v in label.split]
            if user is not None:
                version = versions[split_pick(label.split, prompt_id=prompt.pk, label=name, user=user)]
        body["version"] = VersionSerializer(version, context={"with_body": True}).data
        return Response(body)

    @extend_schema(parameters=[OpenApiParameter("expected", str, description=(
        "Remove only if the label holds this version (else 409 label_conflict)"))],
        responses={204: None}, description="Remove the label (editors). Clients that fetch by this "
        "label get 404 label_not_found from then on.")
    def delete(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        expected = request.query_params.get("expected") or None
        if expected is not None and not is_uuid(expected):
            raise DomainError("expected must be a version id.", code="invalid_request", field="expected")
        services.label_delete(prompt=prompt, name=name, actor=request.user, expected_version_id=expected)
        return Response(status=204)


def _require_eval(request) -> str | None:
    """The evaluation run a gated move or split must pass (?require_eval=), if any."""
    return request.query_params.get("require_eval") or None


class LabelMoveApi(PromptScopedApi):
    @extend_schema(request=LabelMoveRequestSerializer, responses={200: LabelSerializer},
                   parameters=[OpenApiParameter("require_eval", str, description=(
                       "An evaluation run id: the move happens only if the run passes the label's gate "
                       "(or, with no gate, if the candidate scores at least the current version on the "
                       "run's first evaluator). A gated label refuses moves without one."))],
                   description="Compare-and-set: 409 label_conflict (with current_version) when the "
                               "label does not hold `expected`; 409 eval_* (with the run and the figures) "
                               "when the gate refuses the move. A protected label that requires approval "
                               "answers 202 with the pending move a second editor approves.")
    def post(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        data = validated(LabelMoveRequestSerializer, request)
        version, expected = data["version"], data["expected"]
        run_id = _require_eval(request)
        label_move_check(prompt=prompt, name=name, user=request.user, candidate_id=version,
                         baseline_id=expected, run_id=run_id)
        current = selectors.label_list(prompt=prompt).filter(name=name).first()
        if current is not None and current.protected and current.require_approval:
            pending = protection.label_move_request(
                prompt=prompt, name=name, version_id=version, expected_version_id=expected,
                actor=request.user, eval_run=run_id or "")
            return Response({"pending": PendingMoveSerializer(pending).data}, status=202)
        label = services.label_move(prompt=prompt, name=name, version_id=version,
                                    expected_version_id=expected, actor=request.user)
        return Response(LabelSerializer(label).data)


class LabelSplitApi(PromptScopedApi):
    @extend_schema(request=LabelSplitRequestSerializer, responses={200: LabelSerializer},
                   parameters=[OpenApiParameter("require_eval", str, description=(
                       "An evaluation run id: on a gated label, every variant other than the current "
                       "version must pass the gate in this run."))],
                   description="An A/B split: the label points at 2-10 versions with integer weights "
                               "adding up to 100; runs and get_prompt pick one per `user` key. "
                               "Compare-and-set on `expected` (the first variant when already split).")
    def post(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        data = validated(LabelSplitRequestSerializer, request)
        # A gated label splits only behind a run where every new variant passes the gate.
        run_id = _require_eval(request)
        expected = data["expected"]
        for variant in check_variants(data["variants"]):
            candidate = variant["version"]
            if str(candidate) != str(expected):
                label_move_check(prompt=prompt, name=name, user=request.user, candidate_id=candidate,
                                 baseline_id=expected, run_id=run_id)
        label = services.label_split(prompt=prompt, name=name, variants=data["variants"],
                                     expected_version_id=expected, actor=request.user)
        return Response(LabelSerializer(label).data)


class LabelProtectApi(PromptScopedApi):
    @extend_schema(request=LabelProtectRequestSerializer, responses={200: LabelSerializer},
                   description="Owner only: protect a label (editors move it, the owner removes it) and "
                               "optionally require a second editor's approval for every move.")
    def post(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="own")
        data = validated(LabelProtectRequestSerializer, request)
        label = protection.label_protect(prompt=prompt, name=name, actor=request.user, **data)
        return Response(LabelSerializer(label).data)


_STATUS = OpenApiParameter("status", str, enum=["pending", "approved", "rejected"],
                           description="Only requests in this state")


class PendingListApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(parameters=[_STATUS], responses=PendingMoveSerializer(many=True),
                   description="Requested moves, newest first.")
    def get(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        rows = protection.pending_list(prompt=prompt, name=name, status=request.query_params.get("status"))
        return paginated(request, self, rows, ("-id",),
                         lambda items: PendingMoveSerializer(items, many=True).data)

    @extend_schema(request=PendingCreateRequestSerializer, responses={202: PendingMoveSerializer},
                   description="A review request (editors): propose moving the label, with a note; another "
                               "editor approves (the gate checks a run then) or rejects it. The label must "
                               "exist and hold `expected`.")
    def post(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        data = validated(PendingCreateRequestSerializer, request)
        pending = protection.label_move_request(prompt=prompt, name=name, version_id=data["version"],
                                                expected_version_id=data["expected"], actor=request.user,
                                                note=data["note"])
        return Response(PendingMoveSerializer(pending).data, status=202)


class PromptPendingListApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(parameters=[_STATUS], responses=PendingMoveSerializer(many=True),
                   description="Requested moves of every label of the prompt, newest first.")
    def get(self, request, prompt_id):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        rows = protection.pending_list(prompt=prompt, status=request.query_params.get("status"))
        return paginated(request, self, rows, ("-id",),
                         lambda items: PendingMoveSerializer(items, many=True).data)


def approval_gate(request, prompt, name):
    """The evaluation gate, run again for an approval with the request's run."""
    def check(pending):
        label_move_check(prompt=prompt, name=name, user=request.user, candidate_id=pending.to_version_id,
                         baseline_id=pending.from_version_id, run_id=pending.eval_run or None)
    return check


class _PendingDecideApi(PromptScopedApi):
    approve = False

    @extend_schema(request=PendingDecideRequestSerializer, responses={200: PendingMoveSerializer},
                   description="Editors other than the requester. An approval moves the label "
                               "(compare-and-set from where the request found it: 409 if it moved since); "
                               "on a gated label, only behind a passing `eval_run`.")
    def post(self, request, prompt_id, name, pending_id):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        data = validated(PendingDecideRequestSerializer, request)
        pending = protection.pending_decide(
            prompt=prompt, name=name, pending_id=pending_id, actor=request.user, approve=self.approve,
            reason=data["reason"], gate=approval_gate(request, prompt, name), eval_run=data["eval_run"])
        return Response(PendingMoveSerializer(pending).data)


class PendingApproveApi(_PendingDecideApi):
    approve = True


class PendingRejectApi(_PendingDecideApi):
    approve = False


class _LabelStepApi(PromptScopedApi):
    step = None

    @extend_schema(request=LabelStepRequestSerializer, responses={200: LabelSerializer})
    def post(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="edit")
        data = validated(LabelStepRequestSerializer, request)
        label = type(self).step(prompt=prompt, name=name, actor=request.user,
                                expected_version_id=data["expected"])
        return Response(LabelSerializer(label).data)


class LabelUndoApi(_LabelStepApi):
    """Move the label back to where its last move found it."""

    step = services.label_undo


class LabelRedoApi(_LabelStepApi):
    """Re-apply the last undone move."""

    step = services.label_redo


class LabelHistoryApi(PromptScopedApi):
    pagination_class = Page  # the schema documents the cursor page paginated() answers
    @extend_schema(responses=LabelMoveSerializer(many=True), description="Every move, newest first.")
    def get(self, request, prompt_id, name):
        prompt = request_access(request, prompt_id=prompt_id, need="view")
        moves = selectors.label_history(prompt=prompt, name=name).select_related("actor")
        return paginated(request, self, moves, ("-id",),
                         lambda items: LabelMoveSerializer(items, many=True).data)
