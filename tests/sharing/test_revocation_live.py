"""Revocation on the very next request, with two server processes sharing
PostgreSQL and Redis: nothing either process remembers may serve a revoked
link, grant or team membership."""

import os
from contextlib import ExitStack

import httpx
import pytest
from django.conf import settings

from accounts import services as account_services
from sharing import services as sharing
from tests.factories import ApiKeyFactory, PromptFactory, UserFactory
from tests.livesubprocess import free_port, running_server
from tests.sharing.conftest import make_version

# Needs services: two server processes sharing PostgreSQL.
pytestmark = [pytest.mark.slow, pytest.mark.needs_services]


def _test_database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@pytest.fixture
def two_servers(transactional_db):
    """Two uvicorn processes on the test database (committed rows: transactional_db)."""
    env = dict(os.environ, DATABASE_URL=_test_database_url(), LOG_LEVEL="WARNING")
    with ExitStack() as stack:
        bases = []
        for _ in range(2):
            port = free_port()
            args = ["-m", "uvicorn", "config.asgi:application", "--port", str(port), "--lifespan", "off",
                    "--log-level", "warning"]
            base = stack.enter_context(running_server(args, env, port)).base
            bases.append(base)
        yield bases


def test_should_refuse_revoked_link_grant_and_membership_on_next_request_on_another_process(two_servers):
    a, b = two_servers
    owner = UserFactory()
    _, owner_key = ApiKeyFactory.create_with_raw(user=owner)
    prompt = PromptFactory(owner=owner)
    make_version(prompt)
    link, token = sharing.link_create(prompt=prompt, actor=owner, mode="public")
    url = f"/api/prompts/{prompt.pk}"
    as_owner = {"Authorization": f"Bearer {owner_key}"}

    with httpx.Client(timeout=10) as http:
        # The link works on both processes a moment before it is revoked.
        for base in (a, b):
            assert http.get(base + url, headers={"X-Share-Token": token}).status_code == 200
            assert http.get(f"{base}/s/{token}").status_code == 200
        assert http.delete(f"{b}{url}/links/{link.pk}", headers=as_owner).status_code == 200
        for base in (a, b):
            refused = http.get(base + url, headers={"X-Share-Token": token})
            assert refused.status_code == 404, base
            assert refused.json()["error"]["code"] == "prompt_not_found"
            assert http.get(f"{base}/s/{token}").status_code == 404

        # A grant to an account.
        viewer = UserFactory()
        _, viewer_key = ApiKeyFactory.create_with_raw(user=viewer)
        as_viewer = {"Authorization": f"Bearer {viewer_key}"}
        created = http.post(f"{a}{url}/grants", json={"username": viewer.username, "role": "viewer"},
                            headers=as_owner)
        assert created.status_code == 201
        granted = http.get(a + url, headers=as_viewer)
        assert granted.status_code == 200, granted.text
        assert http.delete(f"{b}{url}/grants/{created.json()['id']}", headers=as_owner).status_code == 200
        assert http.get(a + url, headers=as_viewer).status_code == 404

        # A grant to a team: leaving the team ends access at once.
        team_owner = UserFactory()
        _, team_owner_key = ApiKeyFactory.create_with_raw(user=team_owner)
        team = account_services.team_create(owner=team_owner, name="crew")
        member = UserFactory()
        _, member_key = ApiKeyFactory.create_with_raw(user=member)
        account_services.team_member_add(team=team, user=member)
        account_services.team_member_add(team=team, user=owner)  # one grants only to a team one is in
        assert http.post(f"{b}{url}/grants", json={"team": team.pk, "role": "editor"},
                         headers=as_owner).status_code == 201
        as_member = {"Authorization": f"Bearer {member_key}"}
        assert http.get(a + url + "/versions", headers=as_member).status_code == 200
        removed = http.request("DELETE", f"{b}/api/accounts/teams/{team.pk}/members",
                               json={"username": member.username},
                               headers={"Authorization": f"Bearer {team_owner_key}"})
        assert removed.status_code == 200
        assert http.get(a + url + "/versions", headers=as_member).status_code == 404
