"""Datasets: immutable versions, row edits, CSV / JSONL import with per-row errors, export."""

import pytest

from core.error_codes import DomainError
from evals.datasets import dataset_create, dataset_export, dataset_version_create, parse_rows
from evals.models import ImmutableRecordError


@pytest.mark.any_profile
def test_should_report_each_bad_csv_row_and_keep_the_others():
    text = ('q,expected,metadata\n'
            'hello,olleh,\n'
            'ragged,row\n'                      # 2 fields, header has 3
            'x,y,{not json}\n'
            '"quoted, comma",amm,"{""tag"": 1}"\n')
    good, errors = parse_rows(fmt="csv", text=text)
    assert good == [{"variables": {"q": "hello"}, "expected": "olleh", "metadata": {}},
                    {"variables": {"q": "quoted, comma"}, "expected": "amm", "metadata": {"tag": 1}}]
    assert [(e["line"], e["code"]) for e in errors] == [(3, "ragged_row"), (4, "invalid_json")]


@pytest.mark.any_profile
def test_should_refuse_a_csv_header_that_is_not_variable_names():
    with pytest.raises(DomainError) as exc:
        parse_rows(fmt="csv", text="q,not a name\n1,2\n")
    assert exc.value.code == "invalid_csv_header"


@pytest.mark.any_profile
def test_should_read_flat_and_nested_jsonl_and_name_bad_lines():
    text = ('{"q": "a", "expected": "a"}\n'
            '\n'
            '{"variables": {"q": "b"}, "metadata": {"split": "dev"}}\n'
            '{"q": true}\n'
            'nope\n'
            '[1]\n')
    good, errors = parse_rows(fmt="jsonl", text=text)
    assert good == [{"variables": {"q": "a"}, "expected": "a", "metadata": {}},
                    {"variables": {"q": "b"}, "expected": None, "metadata": {"split": "dev"}}]
    assert [(e["line"], e["code"]) for e in errors] == [
        (4, "invalid_variable_value"), (5, "invalid_json"), (6, "invalid_row")]


def test_should_make_a_new_version_on_a_row_edit_and_keep_the_old_one(user):
    dataset = dataset_create(owner=user, name="qa")
    v1 = dataset_version_create(dataset=dataset, author=user, add=[
        {"variables": {"q": "one"}, "expected": "eno"}, {"variables": {"q": "two"}}])
    first, second = v1.rows.order_by("index")
    v2 = dataset_version_create(dataset=dataset, author=user, base_version_id=v1.pk,
                                update={str(first.key): {"variables": {"q": "uno"}, "expected": "onu"}},
                                delete=[str(second.key)], add=[{"variables": {"q": "three", "n": 3}}])
    assert (v1.number, v2.number, v2.parent_id) == (1, 2, v1.pk)
    assert [r.variables for r in v1.rows.order_by("index")] == [{"q": "one"}, {"q": "two"}]
    assert [(r.variables, r.expected) for r in v2.rows.order_by("index")] == [
        ({"q": "uno"}, "onu"), ({"q": "three", "n": 3}, None)]
    assert v2.rows.order_by("index").first().key == first.key  # an edited row keeps its key
    assert v2.variables == ["n", "q"] and v2.row_count == 2
    with pytest.raises(ImmutableRecordError):
        first.expected = "changed"
        first.save()
    export = "".join(dataset_export(version=v2, fmt="csv"))
    assert export.splitlines() == ["n,q,expected,metadata", ",uno,onu,", "3,three,,"]
    assert parse_rows(fmt="jsonl", text="".join(dataset_export(version=v2, fmt="jsonl")))[0][1] == {
        "variables": {"q": "three", "n": 3}, "expected": None, "metadata": {}}


def test_should_refuse_an_empty_version_a_missing_base_and_an_unknown_row(user):
    dataset = dataset_create(owner=user, name="qa")
    with pytest.raises(DomainError) as exc:
        dataset_version_create(dataset=dataset, author=user, add=[])
    assert exc.value.code == "dataset_empty"
    v1 = dataset_version_create(dataset=dataset, author=user, add=[{"variables": {"q": "x"}}])
    with pytest.raises(DomainError) as exc:
        dataset_version_create(dataset=dataset, author=user, add=[{"variables": {"q": "y"}}])
    assert exc.value.code == "base_required"
    with pytest.raises(DomainError) as exc:
        dataset_version_create(dataset=dataset, author=user, base_version_id=v1.pk,
                               delete=["00000000-0000-0000-0000-000000000000"])
    assert (exc.value.code, exc.value.status) == ("row_not_found", 404)
    with pytest.raises(DomainError) as exc:
        dataset_version_create(dataset=dataset, author=user, base_version_id=v1.pk,
                               add=[{"variables": {"q": "y"}, "extra": 1}])
    assert (exc.value.code, exc.value.field) == ("unknown_parameter", "add[0].extra")
    assert dataset.versions.count() == 1


@pytest.mark.needs_services
def test_should_refuse_an_update_below_the_orm_on_postgresql(user):
    from django.db import IntegrityError, connection, transaction

    dataset = dataset_create(owner=user, name="qa")
    version = dataset_version_create(dataset=dataset, author=user,
                                     add=[{"variables": {"q": "x"}, "expected": "y"}])
    for sql in ("UPDATE playground_datasetrow SET expected = 'changed'",
                "UPDATE playground_datasetversion SET row_count = 5"):
        with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(sql)
    assert version.rows.get().expected == "y"
    with connection.cursor() as cursor:  # the author pointer may be cleared
        cursor.execute("UPDATE playground_datasetversion SET author_id = NULL")
