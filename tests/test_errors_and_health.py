import pytest


@pytest.mark.django_db
@pytest.mark.needs_services  # the services' parts (the embedded ones: tests/test_embedded_default.py)
def test_healthz_reports_every_part_ok(client, settings):
    settings.METRICS_TOKEN = "scrape-token"
    response = client.get("/healthz", HTTP_AUTHORIZATION="Bearer scrape-token")
    body = response.json()
    assert response.status_code == 200, body
    assert set(body["parts"]) == {"database", "cache", "channel_layer", "broker", "object_store"}
    assert all(part["status"] == "ok" for part in body["parts"].values())
    assert body["parts"]["database"]["detail"] == "postgresql"
    assert body["parts"]["object_store"]["detail"].startswith("s3 ")


@pytest.mark.django_db
def test_healthz_is_503_when_a_part_is_down(client, settings):
    from core.blobstore import get_blob_store

    settings.S3_BUCKET = "no-such-bucket-here"
    get_blob_store.cache_clear()
    try:
        response = client.get("/healthz")
    finally:
        get_blob_store.cache_clear()
    assert response.status_code == 503
    assert response.json()["parts"]["object_store"] == {"status": "error"}  # no bucket or endpoint
    assert response.json()["parts"]["database"] == {"status": "ok"}


@pytest.mark.django_db
def test_metrics_and_health_details_need_the_token_or_staff(client, settings):
    from tests.factories import UserFactory

    settings.METRICS_TOKEN = "scrape-token"
    anonymous = client.get("/metrics")
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "unauthorized"
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    scraped = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token")
    assert scraped.status_code == 200 and b"# TYPE" in scraped.content
    assert all(set(part) == {"status"} for part in client.get("/healthz").json()["parts"].values())
    client.force_login(UserFactory(is_staff=True))
    assert client.get("/metrics").status_code == 200
    assert "detail" in client.get("/healthz").json()["parts"]["database"]


@pytest.mark.parametrize("path", ["/api/nope", "/v1/nope/deeper", "/api/accounts/nope"])
@pytest.mark.django_db
def test_unknown_api_routes_are_json_404s(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_malformed_json_is_a_json_400(auth_client):
    response = auth_client.post("/api/accounts/keys", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"


@pytest.mark.django_db
def test_validation_errors_name_the_field(auth_client):
    response = auth_client.post("/api/accounts/keys", {"name": "x", "tier": "platinum"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "tier"
    assert response.json()["error"]["code"] == "invalid_choice"


@pytest.mark.django_db
def test_openapi_schema_is_served(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert "/api/accounts/keys" in response.json()["paths"]


@pytest.mark.django_db
def test_openapi_schema_describes_the_generation_endpoints(client):
    from drf_spectacular.validation import validate_schema

    from inference_protocol import config, features

    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    validate_schema(schema)  # OpenAPI 3.0, hand-written parts included (inference_client/openapi.py)
    for path, streams in (("/v1/chat/completions", True), ("/v1/completions", True),
                          ("/v1/embeddings", False)):
        operation = schema["paths"][path]["post"]
        media = {"application/json", "text/event-stream"} if streams else {"application/json"}
        assert set(operation["responses"]["200"]["content"]) == media
        assert "4XX" in operation["responses"] and not any(c.startswith("5") for c in operation["responses"])
    generating = sorted(m for m, spec in config.current().models.items() if features.generates(spec))
    request = schema["components"]["schemas"]["ChatCompletionRequest"]
    assert request["properties"]["model"].get("enum", []) == generating


@pytest.mark.django_db
def test_openapi_schema_links_each_create_to_what_it_created(client):
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    links = paths["/api/prompts/{prompt_id}/versions"]["post"]["responses"]["201"]["links"]
    read = links[paths["/api/prompts/{prompt_id}/versions/{version_id}"]["get"]["operationId"]]
    assert read["parameters"] == {"prompt_id": "$request.path.prompt_id", "version_id": "$response.body#/id"}
    webhook = paths["/api/webhooks"]["post"]["responses"]["201"]["links"]
    for target in ("/api/webhooks/{endpoint_id}", "/api/webhooks/{endpoint_id}/rotate-secret"):
        for operation in paths[target].values():
            assert webhook[operation["operationId"]]["parameters"] == {"endpoint_id": "$response.body#/id"}
