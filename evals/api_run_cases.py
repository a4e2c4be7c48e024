"""POST /api/runs/<run_id>/test-case {dataset_id}: a playground run as a dataset row."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.jsonbody import validated

from .run_cases import run_test_case_add
from .serializers import DatasetVersionSerializer


class TestCaseRequestSerializer(serializers.Serializer):
    dataset_id = serializers.UUIDField(help_text="A dataset the caller may edit.")


class RunTestCaseApi(APIView):
    @extend_schema(request=TestCaseRequestSerializer, responses={201: DatasetVersionSerializer})
    def post(self, request, run_id):
        """Add the run as a row (variables as inputs, output as expected) in a new version of the dataset."""
        v = validated(TestCaseRequestSerializer, request)
        version = run_test_case_add(user=request.user, run_id=run_id, dataset_id=v["dataset_id"])
        return Response(DatasetVersionSerializer(version).data, status=status.HTTP_201_CREATED)
