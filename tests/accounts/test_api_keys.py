import io

import pytest
from django.utils import timezone

from accounts.models import ApiKey, hash_key
from tests.factories import ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_created_key_is_shown_once_and_stored_only_as_hash(auth_client, user):
    response = auth_client.post("/api/accounts/keys", {"name": "ci"}, format="json")
    assert response.status_code == 201
    raw = response.json()["key"]
    row = ApiKey.objects.get(pk=response.json()["id"])
    assert row.key_hash == hash_key(raw) and raw not in row.key_hash
    assert row.tier == "free" and raw.startswith(row.prefix)
    listed = auth_client.get("/api/accounts/keys").json()
    assert all("key" not in item for item in listed)


def test_should_refuse_a_paid_key_to_a_free_account(auth_client, user):
    response = auth_client.post("/api/accounts/keys", {"name": "ci", "tier": "paid"}, format="json")
    assert response.status_code == 403, response.json()
    assert response.json()["error"]["code"] == "tier_not_allowed"
    assert response.json()["error"]["field"] == "tier"
    assert not ApiKey.objects.filter(user=user).exists()


def test_should_give_keys_the_tier_staff_set_on_the_account(auth_client, user):
    from django.core.management import call_command

    old, _ = ApiKeyFactory.create_with_raw(user=user)
    call_command("account_tier", user.username, "paid", stdout=io.StringIO())
    old.refresh_from_db()
    assert old.tier == "paid"  # existing keys follow the account
    named = auth_client.post("/api/accounts/keys", {"name": "ci", "tier": "paid"}, format="json")
    unnamed = auth_client.post("/api/accounts/keys", {"name": "cd"}, format="json")
    assert (named.status_code, unnamed.status_code) == (201, 201)
    assert named.json()["tier"] == unnamed.json()["tier"] == "paid"
    assert auth_client.post("/api/accounts/keys", {"name": "x", "tier": "free"},
                            format="json").json()["error"]["code"] == "tier_not_allowed"
    call_command("account_tier", user.username, "free", stdout=io.StringIO())
    assert set(ApiKey.objects.filter(user=user).values_list("tier", flat=True)) == {"free"}


def test_should_read_a_sessions_tier_once_and_again_after_staff_change_it(
        user, django_capture_on_commit_callbacks):
    from asgiref.sync import async_to_sync, sync_to_async

    from accounts.keycache import cached_account_tier
    from accounts.selectors import account_tier
    from accounts.services import account_tier_set

    reads = []

    async def lookup(who):
        reads.append(who.pk)
        return await sync_to_async(account_tier)(user=who)

    def session_tier():
        return async_to_sync(cached_account_tier)(user, lookup)

    assert (session_tier(), session_tier()) == ("free", "free") and len(reads) == 1  # no read per request
    with django_capture_on_commit_callbacks(execute=True):
        account_tier_set(user=user, tier="paid")
    assert (session_tier(), session_tier()) == ("paid", "paid") and len(reads) == 2


def test_bearer_key_authenticates_and_records_last_use(api_client, api_key):
    key, raw = api_key
    assert key.last_used_at is None
    response = api_client.get("/api/accounts/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200
    assert response.json() == {"id": key.user_id, "username": key.user.username, "tier": "free"}
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_last_use_is_written_at_most_once_per_window(api_client, api_key):
    key, raw = api_key
    api_client.get("/api/accounts/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    key.refresh_from_db()
    first = key.last_used_at
    api_client.get("/api/accounts/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    key.refresh_from_db()
    assert key.last_used_at == first


def test_revoked_key_is_refused_with_a_named_cause(auth_client, api_client, api_key):
    key, raw = api_key
    assert auth_client.delete(f"/api/accounts/keys/{key.pk}").status_code == 200
    response = api_client.get("/api/accounts/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "revoked_api_key"


@pytest.mark.parametrize(
    ("header", "code"),
    [("Bearer not-a-real-key", "invalid_api_key"), ("Bearer ", "malformed_api_key"),
     ("Bearer two words", "malformed_api_key")],
)
def test_bad_keys_get_401_json(api_client, header, code):
    response = api_client.get("/api/accounts/me", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == code


def test_anonymous_gets_401_json(api_client):
    response = api_client.get("/api/accounts/me")
    assert response.status_code in (401, 403)
    assert response.json()["error"]["code"] == "not_authenticated"


def test_a_user_cannot_revoke_someone_elses_key(auth_client):
    other_key, _ = ApiKeyFactory.create_with_raw(user=UserFactory())
    assert auth_client.delete(f"/api/accounts/keys/{other_key.pk}").status_code == 404
    other_key.refresh_from_db()
    assert other_key.revoked_at is None


def test_revoking_twice_keeps_the_first_time(auth_client, api_key):
    key, _ = api_key
    auth_client.delete(f"/api/accounts/keys/{key.pk}")
    key.refresh_from_db()
    first = key.revoked_at
    auth_client.delete(f"/api/accounts/keys/{key.pk}")
    key.refresh_from_db()
    assert key.revoked_at == first <= timezone.now()
