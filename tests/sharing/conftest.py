"""A shared prompt with every kind of principal around it, in one of three
states: access live, access revoked, access expired."""

from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import services as account_services
from playground import services as playground_services
from sharing import services as sharing
from sharing.models import Grant, ShareLink
from tests.factories import PromptFactory, PromptVersionFactory, UserFactory

PRINCIPALS = ["owner", "editor", "viewer", "team_viewer", "team_editor", "public_in", "public_out",
              "login_in", "login_out", "stranger", "anonymous"]
STATES = ["active", "revoked", "expired"]
# Principals who are signed in when they make their requests.
SIGNED_IN = {"owner", "editor", "viewer", "team_viewer", "team_editor", "public_in", "login_in", "stranger"}
TOKEN_OF = {"public_in": "public", "public_out": "public", "login_in": "login", "login_out": "login"}


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    # Factories set a password on every user; the default hasher costs ~0.5 s here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class World:
    owner: object
    prompt: object
    v1: object
    v2: object
    users: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)
    grants: dict = field(default_factory=dict)
    teams: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def client(self, principal: str) -> APIClient:
        client = APIClient()
        user = self.users.get(principal)
        if principal in SIGNED_IN:
            client.force_login(user)
        if principal in TOKEN_OF:
            client.credentials(HTTP_X_SHARE_TOKEN=self.tokens[TOKEN_OF[principal]])
        return client


def make_version(prompt, parent=None, body="Hello {{name}}!\n"):
    return PromptVersionFactory(prompt=prompt, parent=parent, body=body, variables={"name": "World"})


def build_world(state: str = "active") -> World:
    owner = UserFactory()
    prompt = PromptFactory(owner=owner, title="Shared prompt")
    v1 = make_version(prompt)
    v2 = make_version(prompt, v1, body="Hello {{name}}, again!\n")
    w = World(owner=owner, prompt=prompt, v1=v1, v2=v2)
    w.users = {name: UserFactory() for name in PRINCIPALS if name not in ("owner", "anonymous")}
    w.users["owner"] = owner
    # production: created then moved (undo possible); staging: moved then undone (redo possible).
    for name in ("production", "staging"):
        playground_services.label_move(prompt=prompt, name=name, version_id=v1.pk, expected_version_id=None,
                                       actor=owner)
        playground_services.label_move(prompt=prompt, name=name, version_id=v2.pk, expected_version_id=v1.pk,
                                       actor=owner)
    playground_services.label_undo(prompt=prompt, name="staging", actor=owner)

    w.grants["editor"] = sharing.grant_create(prompt=prompt, actor=owner, role="editor",
                                              username=w.users["editor"].username)
    w.grants["viewer"] = sharing.grant_create(prompt=prompt, actor=owner, role="viewer",
                                              username=w.users["viewer"].username)
    for name, role in (("team_viewer", "viewer"), ("team_editor", "editor")):
        team = account_services.team_create(owner=UserFactory(), name=f"{name} team")
        account_services.team_member_add(team=team, user=w.users[name])
        account_services.team_member_add(team=team, user=owner)  # one grants only to a team one is in
        w.teams[name] = team
        w.grants[name] = sharing.grant_create(prompt=prompt, actor=owner, role=role, team_id=team.pk)
    for mode in ("public", "login"):
        w.links[mode], w.tokens[mode] = sharing.link_create(prompt=prompt, actor=owner, mode=mode, name=mode)
    # Targets for owner-only writes, so they never disturb the principals' own access.
    w.extra["bystander"] = UserFactory()
    w.extra["spare_link"], _ = sharing.link_create(prompt=prompt, actor=owner, mode="public", name="spare")
    w.extra["spare_grant"] = sharing.grant_create(prompt=prompt, actor=owner, role="viewer",
                                                  username=UserFactory().username)

    if state == "revoked":
        for link in w.links.values():
            sharing.link_revoke(prompt=prompt, link_id=link.pk, actor=owner)
        for name in ("editor", "viewer", "team_editor"):
            sharing.grant_revoke(prompt=prompt, grant_id=w.grants[name].pk, actor=owner)
        # The team viewer loses access by leaving the team, not by a revoke.
        account_services.team_member_remove(team=w.teams["team_viewer"], user=w.users["team_viewer"])
    elif state == "expired":
        past = timezone.now() - timedelta(seconds=1)
        ShareLink.objects.filter(pk__in=[link.pk for link in w.links.values()]).update(expires_at=past)
        Grant.objects.filter(pk__in=[w.grants[n].pk for n in ("editor", "viewer", "team_viewer",
                                                                  "team_editor")]).update(expires_at=past)
    return w


@pytest.fixture
def world(db) -> World:
    return build_world("active")
