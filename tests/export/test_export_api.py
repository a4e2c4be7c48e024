"""GET .../versions/<vid>/export: the snippets, filters, references and access."""

import pytest

from playground import services
from tests.export.conftest import MODEL, MODELS
from tests.factories import PromptFactory, UserFactory


@pytest.fixture
def version(user, settings):
    settings.INFERENCE_MODELS = MODELS
    prompt = PromptFactory(owner=user, title="Summariser")
    return services.version_create(prompt=prompt, author=user, body="Sum up {{text}}", model_name=MODEL,
                                   variables={"text": "this"}, temperature=0.5)


def _url(version, query=""):
    return f"/api/prompts/{version.prompt_id}/versions/{version.pk}/export{query}"


def test_should_return_every_language_in_both_forms_without_a_secret(auth_client, version, api_key):
    data = auth_client.get(_url(version)).json()
    forms = {(s["lang"], s["form"]) for s in data["snippets"]}
    assert forms == {("curl", "inline"), ("curl", "reference"), ("python-httpx", "inline"),
                     ("python-httpx", "reference"), ("python-openai", "inline"), ("javascript", "inline"),
                     ("javascript", "reference"), ("curl", "short"), ("python-httpx", "short"),
                     ("python-openai", "short"), ("javascript", "short")}
    assert [s["form"] for s in data["snippets"] if s["lang"] == "curl"][0] == "short"  # the default
    curl = next(s["code"] for s in data["snippets"] if s["form"] == "short" and s["lang"] == "curl")
    assert "<<'JSON'" in curl and '"content": "Sum up this"' in curl and len(curl.splitlines()) < 20
    assert data["base_url"] == "http://testserver" and data["params"] == {"temperature": 0.5}
    assert data["variables"] == [{"name": "text", "default": "this", "shell": "PY_TEXT", "python": "text"}]
    # No label on the version: the reference is the version id itself.
    assert data["reference"]["url"].endswith(f"/versions/{version.pk}/run")
    for snippet in data["snippets"]:
        assert "PROMPTYARD_API_KEY" in snippet["code"] and api_key[1] not in snippet["code"]


def test_should_filter_by_language_and_name_a_bad_one(auth_client, version):
    data = auth_client.get(_url(version, "?lang=curl,javascript")).json()
    assert {s["lang"] for s in data["snippets"]} == {"curl", "javascript"}
    bad = auth_client.get(_url(version, "?lang=cobol"))
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "lang"


def test_should_reference_a_label_and_use_the_configured_base_url(auth_client, version, settings):
    settings.PROMPT_EXPORT_BASE_URL = "https://promptyard.example.com/"
    services.label_move(prompt=version.prompt, name="staging", version_id=version.pk,
                        expected_version_id=None, actor=version.prompt.owner)
    data = auth_client.get(_url(version)).json()
    assert data["reference"] == {
        "kind": "label", "name": "staging",
        "url": f"https://promptyard.example.com/api/prompts/{version.prompt_id}/labels/staging/run"}
    missing = auth_client.get(_url(version, "?label=production"))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "label_not_found"


def test_should_hide_the_export_from_a_stranger(api_client, version):
    api_client.force_login(UserFactory())
    assert api_client.get(_url(version)).status_code == 404


@pytest.mark.django_db(transaction=True)  # the run looks the key up on a thread of its own
def test_should_refuse_a_lone_surrogate_in_a_run_variable_naming_it(api_client, version, api_key):
    import json

    raw = json.dumps({"variables": {"text": "x \ud800"}})  # the escape a JSON client may send
    response = api_client.post(f"/api/prompts/{version.prompt_id}/versions/{version.pk}/run", raw,
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {api_key[1]}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_unicode"
    assert response.json()["error"]["field"] == "variables.text"


def test_should_never_name_a_shell_variable_that_a_program_reads(user, settings):
    """curl scripts export their variables: a name like SSLKEYLOGFILE or GCONV_PATH would steer
    OpenSSL or the C library of every program the script runs."""
    from playground.bodies import body_text
    from playground.calls.export import shell
    from playground.calls.export.spec import Reference, export_spec

    settings.INFERENCE_MODELS = MODELS
    risky = ["sslkeylogfile", "res_options", "localdomain", "hostaliases", "openssl_conf", "xdg_config_home",
             "gconv_path", "path", "ld_preload", "curl_home", "https_proxy", "ifs"]
    prompt = PromptFactory(owner=user)
    version = services.version_create(prompt=prompt, author=user, model_name=MODEL,
                                      body=" ".join("{{" + n + "}}" for n in risky),
                                      variables={n: "x" for n in risky})
    spec = export_spec(version=version, body=body_text(version), base_url="http://x",
                       reference=Reference("version", str(version.pk), "/run"))
    names = shell.shell_names(spec)
    assert set(names) == set(risky)
    assert all(name.startswith("PY_") for name in names.values()), names
    assert len(set(names.values())) == len(risky)
