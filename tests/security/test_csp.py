"""Content-Security-Policy: no HTML page had one, so an injected script would run.
Every HTML response now carries a policy of our own origin only, with a script
nonce per request; /api/docs is served from our static files (no CDN)."""

import re
import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from core.csp import HEADER
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.any_profile]

DIRECTIVES = ["default-src 'self'", "object-src 'none'", "base-uri 'self'", "frame-ancestors 'none'",
              "form-action 'self'", "style-src 'self'", "img-src 'self' data:"]


def _routes(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def _concrete(route: str, ids: dict) -> str | None:
    """A path for the route: our objects' ids where the name says which, else any value."""
    if "^" in route or "(?P" in route:
        return None  # a regex route (admin's app index, the JSON 404): other walked paths reach them

    def value(match):
        kind, name = match.group(1) or "str", match.group(2)
        if kind == "uuid":
            return str(ids.get(name, uuid.uuid4()))
        return "1" if kind == "int" else str(ids.get(name, "x"))
    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route)


@pytest.fixture
def superuser_client(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(user)
    return client, user


def _policy(response) -> dict[str, str]:
    return {d.split(" ", 1)[0]: d for d in (part.strip() for part in response[HEADER].split(";"))}


def test_every_html_page_of_the_url_patterns_carries_the_policy(superuser_client):
    client, user = superuser_client
    version = PromptVersionFactory(prompt=PromptFactory(owner=user))
    ids = {"prompt_id": version.prompt_id, "version_id": version.pk, "name": "production"}
    html, missing = [], []
    for route in sorted(set(_routes(get_resolver().url_patterns))):
        path = _concrete(route, ids)
        if path is None:
            continue
        response = client.get(path)
        if response.get("Content-Type", "").startswith("text/html"):
            html.append((path, response.status_code))
            if HEADER not in response:
                missing.append(path)
    assert missing == []
    ok = {path for path, status in html if status == 200}
    for page in ("/", "/prompts/", "/evals/", "/chat/", "/settings/api-keys/", "/api/docs/", "/control/",
                 "/admin/"):
        assert page in ok, f"{page} not walked as a 200 HTML page: {sorted(ok)}"


@pytest.mark.parametrize("path", ["/", "/prompts/", "/login/", "/no-such-page/", "/api/docs/"])
def test_the_policy_allows_only_our_origin_and_a_fresh_nonce(superuser_client, path):
    client, _ = superuser_client
    first, second = client.get(path), client.get(path)
    policy = _policy(first)
    for directive in DIRECTIVES:
        assert directive in policy.values(), (directive, first[HEADER])
    assert "'unsafe-inline'" not in first[HEADER] and "'unsafe-eval'" not in first[HEADER]
    assert policy["connect-src"] == "connect-src 'self' ws://testserver wss://testserver"
    nonce = re.fullmatch(r"script-src 'self' 'nonce-([A-Za-z0-9_-]{22})'", policy["script-src"]).group(1)
    assert nonce not in _policy(second)["script-src"]  # one per request


def test_json_responses_carry_no_page_policy(superuser_client):
    client, _ = superuser_client
    assert HEADER not in client.get("/api/prompts/")


def test_the_api_docs_load_nothing_from_another_origin(superuser_client):
    client, _ = superuser_client
    page = client.get("/api/docs/")
    text = page.content.decode()
    assert "<style" not in text and not re.search(r"<script>", text)  # nothing inline
    urls = re.findall(r'(?:src|href)="([^"]+)"', text)
    assert urls and all(u.startswith("/") for u in urls), urls
    for url in urls:
        response = client.get(url.replace("&amp;", "&"))
        assert response.status_code == 200, url
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
