import threading

import pytest
from django.db import DatabaseError, connection, transaction

from playground import services
from playground.models import ImmutableVersionError, PromptVersion
from tests.factories import PromptFactory, PromptVersionFactory


@pytest.mark.django_db
@pytest.mark.needs_services  # the immutability trigger is PostgreSQL's
def test_raw_sql_update_of_a_version_is_rejected_by_the_trigger(prompt):
    version = PromptVersionFactory(prompt=prompt, body="original\n")
    for column, value in (("message", "rewritten"), ("body_sha256", "0" * 64), ("temperature", 1.5)):
        with pytest.raises(DatabaseError, match="immutable"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"UPDATE playground_promptversion SET {column} = %s WHERE id = %s",
                               [value, version.pk])
    with connection.cursor() as cursor:  # clearing the author (account deleted) stays possible
        cursor.execute("UPDATE playground_promptversion SET author_id = NULL WHERE id = %s", [version.pk])
    version.refresh_from_db()
    assert version.message == "edit" and version.author_id is None


@pytest.mark.django_db
def test_model_layer_refuses_to_change_a_saved_version(prompt):
    version = PromptVersionFactory(prompt=prompt)
    version.message = "rewritten"
    with pytest.raises(ImmutableVersionError):
        version.save()
    with pytest.raises(ImmutableVersionError):
        PromptVersion.objects.filter(pk=version.pk).update(message="rewritten")
    with pytest.raises(ImmutableVersionError):
        PromptVersion.objects.bulk_update([version], ["message"])
    assert PromptVersion.objects.get(pk=version.pk).message == "edit"


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_edits_of_one_parent_make_two_children():
    prompt = PromptFactory()
    root = PromptVersionFactory(prompt=prompt, body="shared start\n")
    barrier = threading.Barrier(2)
    results, errors = [], []

    def edit(text):
        try:
            barrier.wait(timeout=10)
            results.append(services.version_create(prompt=prompt, author=prompt.owner, parent_id=root.pk,
                                                   body=text, model_name="fixed-cost"))
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=edit, args=(f"edit by {who}\n",)) for who in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    children = PromptVersion.objects.filter(parent=root)
    assert children.count() == 2
    assert sorted(children.values_list("number", flat=True)) == [2, 3]
    from playground.selectors import version_heads

    assert set(version_heads(prompt=prompt)) == set(children)
