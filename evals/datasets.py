"""Dataset writes: create, new versions (row edits, imports), import parsing
and export. `check_*` validates before anything is written; each write is one
transaction, so a failed request leaves no version behind.

A row is {"variables": {name: str|number}, "expected": str|null, "metadata": {}}.
Importing accepts:
- CSV: a header row; the columns `expected` and `metadata` (a JSON object) are
  special, every other column is a variable;
- TSV: the same with tabs between cells (what a spreadsheet copies);
- JSONL: one JSON object a line, either {"variables", "expected", "metadata"}
  or flat (every key but `expected` and `metadata` is a variable).
Rows that do not parse are reported one by one (line number, code, message);
the others import (with `skip_invalid`), or nothing does.
"""

from __future__ import annotations

import csv
import io
import json
import uuid

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.csvexport import FormulaSafeWriter
from core.error_codes import DomainError
from core.ids import is_uuid, parse_uuid
from inference_protocol.validation import InvalidInput, check_text
from playground.templating import NAME

from .models import Dataset, DatasetRow, DatasetVersion, EvalRun, LabelGate

ROW_FIELDS = {"variables", "expected", "metadata", "key"}


class RowError(ValueError):
    def __init__(self, message: str, code: str, field: str = ""):
        super().__init__(message)
        self.code, self.field = code, field


NUL_MESSAGE = "{} contains a NUL character, which a row cannot store."


def _text(value, field: str) -> str:
    try:
        check_text(value, field=field)
    except InvalidInput as exc:
        raise RowError(str(exc), "invalid_unicode", field) from None
    if "\x00" in value:
        raise RowError(NUL_MESSAGE.format(field), "null_characters_not_allowed", field)
    if len(value.encode()) > settings.EVAL_ROW_VALUE_MAX_BYTES:
        limit = settings.EVAL_ROW_VALUE_MAX_BYTES
        raise RowError(f"{field} is longer than {limit} bytes.", "value_too_large", field)
    return value


def check_row(data) -> dict:
    """One row, normalised; RowError names what is wrong."""
    if not isinstance(data, dict):
        raise RowError("A row is a JSON object.", "invalid_row")
    unknown = set(data) - ROW_FIELDS
    if unknown:
        name = sorted(unknown)[0]
        raise RowError(f"Unrecognized row field: {name}.", "unknown_parameter", name)
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise RowError("variables must be an object of name -> value.", "invalid_type", "variables")
    out = {}
    for name, value in variables.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise RowError(f"Invalid variable name {name!r}.", "invalid_variable_name", "variables")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise RowError(
                f"The value of {name!r} must be a string or a number.",
                "invalid_variable_value",
                f"variables.{name}",
            )
        out[name] = _text(value, f"variables.{name}") if isinstance(value, str) else value
    expected = data.get("expected")
    if expected is not None:
        if isinstance(expected, bool) or not isinstance(expected, str | int | float):
            raise RowError("expected must be a string, a number or null.", "invalid_type", "expected")
        expected = _text(str(expected), "expected")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RowError("metadata must be an object.", "invalid_type", "metadata")
    dumped = json.dumps(metadata)
    if len(dumped.encode()) > settings.EVAL_ROW_VALUE_MAX_BYTES:
        raise RowError("metadata is too large.", "value_too_large", "metadata")
    if "\\u0000" in dumped:  # json.dumps escapes NUL, in keys and values alike
        raise RowError(NUL_MESSAGE.format("metadata"), "null_characters_not_allowed", "metadata")
    row = {"variables": out, "expected": expected, "metadata": metadata}
    if data.get("key") is not None:
        row["key"] = parse_uuid(data["key"])
        if row["key"] is None:
            raise RowError("key must be a row key (a UUID).", "invalid_type", "key")
    return row


def parse_rows(*, fmt: str, text: str, on_progress=None) -> tuple[list[dict], list[dict]]:
    """(valid rows, errors) of an upload. Errors: {"line", "code", "message", "field"}.
    `on_progress(line)` is called every 2,000 rows (background imports)."""
    if fmt in ("csv", "tsv"):
        items = _csv_items(text, delimiter="\t" if fmt == "tsv" else ",")
    elif fmt == "jsonl":
        items = _jsonl_items(text)
    else:
        raise DomainError("format must be csv, tsv or jsonl.", code="invalid_format", field="format")
    rows, errors = [], []
    for count, (line, item) in enumerate(items, start=1):
        if on_progress is not None and count % 2000 == 0:
            on_progress(line)
        try:
            if isinstance(item, RowError):
                raise item
            rows.append(check_row(item))
        except RowError as exc:
            errors.append({"line": line, "code": exc.code, "message": str(exc), "field": exc.field})
        if len(rows) > settings.EVAL_DATASET_MAX_ROWS:
            raise DomainError(
                f"A dataset version holds at most {settings.EVAL_DATASET_MAX_ROWS} rows.",
                code="too_many_rows",
                field="file",
            )
    return rows, errors


def _split_flat(obj: dict) -> dict:
    if "variables" in obj:
        return obj
    return {
        "variables": {k: v for k, v in obj.items() if k not in ("expected", "metadata")},
        **{k: obj[k] for k in ("expected", "metadata") if k in obj},
    }


def _jsonl_items(text: str):
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            yield number, RowError(f"Not JSON: {exc}.", "invalid_json")
            continue
        yield number, _split_flat(obj) if isinstance(obj, dict) else obj


def _csv_items(text: str, delimiter: str):
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise DomainError(f"The CSV header does not parse: {exc}.", code="invalid_csv",
                          field="file") from None
    header = [h.strip() for h in header]
    if not header or any(not h for h in header) or len(set(header)) != len(header):
        raise DomainError("The CSV header must name every column once.", code="invalid_csv_header",
                          field="file")
    bad = [h for h in header if h not in ("expected", "metadata") and not NAME.fullmatch(h)]
    if bad:
        raise DomainError(
            f"CSV column {bad[0]!r} is not a valid variable name.", code="invalid_csv_header", field="file"
        )
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield reader.line_num, RowError(f"The row does not parse: {exc}.", "invalid_csv")
            continue
        if not fields:
            continue
        if len(fields) != len(header):
            message = f"The row has {len(fields)} fields; the header has {len(header)}."
            yield reader.line_num, RowError(message, "ragged_row")
            continue
        obj = dict(zip(header, fields, strict=True))
        item = {"variables": {k: v for k, v in obj.items() if k not in ("expected", "metadata")}}
        if obj.get("expected"):
            item["expected"] = obj["expected"]
        if obj.get("metadata"):
            try:
                item["metadata"] = json.loads(obj["metadata"])
            except ValueError:
                yield reader.line_num, RowError("metadata is not JSON.", "invalid_json", "metadata")
                continue
        yield reader.line_num, item


def dataset_create(*, owner, name: str, description: str = "") -> Dataset:
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise DomainError("Give the dataset a name of 1 to 200 characters.", code="invalid_name",
                          field="name")
    return Dataset.objects.create(owner=owner, name=name, description=description)


def dataset_update(*, dataset: Dataset, name: str | None = None, description: str | None = None) -> Dataset:
    """Rename it, or change its description (its versions never change)."""
    fields = []
    if name is not None:
        name = name.strip() if isinstance(name, str) else ""
        if not name or len(name) > 200:
            raise DomainError("Give the dataset a name of 1 to 200 characters.", code="invalid_name",
                              field="name")
        dataset.name = name
        fields.append("name")
    if description is not None:
        dataset.description = description
        fields.append("description")
    if fields:
        dataset.save(update_fields=[*fields, "updated_at"])
    return dataset


def dataset_delete(*, dataset: Dataset) -> None:
    """Delete it with its versions, rows, imports, links and grants. Refused (409
    dataset_in_use) while a run used one of its versions (runs are records of
    exactly what they used, so the rows stay with them) or a label gate names it
    (the label would lose its guard): nothing is deleted, and the error counts both."""
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if locked is None:
            return
        runs = EvalRun.objects.filter(dataset_version__dataset=locked).count()
        gates = LabelGate.objects.filter(dataset=locked).count()
        if runs or gates:
            raise DomainError(f"The dataset is in use: {runs} run(s) used its versions and {gates} label "
                              "gate(s) name it. A run keeps exactly what it used, so a dataset a run used "
                              "stays; "
                              "a gate goes when its label's gate is removed.",
                              code="dataset_in_use", extra={"runs": runs, "gates": gates})
        locked.delete()


def _api_row(data, where: str) -> dict:
    try:
        return check_row(data)
    except RowError as exc:
        raise DomainError(f"{where}: {exc}", code=exc.code,
                          field=f"{where}.{exc.field}".rstrip(".")) from None


def _check_base(dataset: Dataset, base_version_id) -> DatasetVersion | None:
    if base_version_id is None:
        return None
    base = (
        DatasetVersion.objects.filter(dataset=dataset, pk=base_version_id).first()
        if is_uuid(base_version_id)
        else None
    )
    if base is None:
        raise DomainError(
            "The base is not a version of this dataset.",
            code="version_not_found",
            field="base",
        )
    return base




def dataset_version_create(
    *,
    dataset: Dataset,
    author,
    base_version_id=None,
    add: list | None = None,
    update: dict | None = None,
    delete: list | None = None,
    replace: bool = False,
    message: str = "",
) -> DatasetVersion:
    """A child of `base_version_id` (None: the first version, or a fresh one with
    `replace`): the base's rows, minus `delete` (row keys), with `update`
    (key -> row) applied, plus `add`. A version's rows are checked first."""
    base = _check_base(dataset, base_version_id)
    if base is None and not replace and dataset.versions.exists():
        raise DomainError(
            "This dataset already has versions: name the version you edited as base.",
            code="base_required",
            field="base",
        )
    add = [_api_row(r, f"add[{i}]") for i, r in enumerate(add or [])]
    update = {str(k): _api_row(v, f"update.{k}") for k, v in (update or {}).items()}
    delete = {str(k) for k in (delete or [])}
    rows: list[dict] = []
    if base is not None and not replace:
        known = set()
        for row in base.rows.order_by("index").values("key", "variables", "expected", "metadata"):
            key = str(row["key"])
            known.add(key)
            if key in delete:
                continue
            rows.append({**update[key], "key": row["key"]} if key in update else row)
        missing = sorted((set(update) | delete) - known)
        if missing:
            raise DomainError(
                f"No row with key {missing[0]} in the base version.",
                code="row_not_found",
                field="rows",
            )
    rows.extend(add)
    if not rows:
        raise DomainError("A dataset version needs at least one row.", code="dataset_empty", field="rows")
    if len(rows) > settings.EVAL_DATASET_MAX_ROWS:
        raise DomainError(
            f"A dataset version holds at most {settings.EVAL_DATASET_MAX_ROWS} rows.",
            code="too_many_rows",
            field="rows",
        )
    names = sorted({name for row in rows for name in row["variables"]})
    with transaction.atomic():
        Dataset.objects.filter(pk=dataset.pk).update(
            version_count=F("version_count") + 1, updated_at=timezone.now()
        )
        number = Dataset.objects.values_list("version_count", flat=True).get(pk=dataset.pk)
        version = DatasetVersion(
            dataset=dataset,
            parent=base,
            number=number,
            message=message,
            author=author,
            row_count=len(rows),
            variables=names,
        )
        version.save()
        DatasetRow.objects.bulk_create(
            [
                DatasetRow(
                    version=version,
                    index=i,
                    key=row.get("key") or uuid.uuid4(),
                    variables=row["variables"],
                    expected=row["expected"],
                    metadata=row["metadata"],
                )
                for i, row in enumerate(rows)
            ],
            batch_size=2000,
        )
    return version


def dataset_export(*, version: DatasetVersion, fmt: str):
    """The version's rows as JSONL or CSV text chunks (streamed)."""
    rows = version.rows.order_by("index").values_list("variables", "expected", "metadata").iterator(2000)
    if fmt == "jsonl":
        for variables, expected, metadata in rows:
            yield (
                json.dumps(
                    {"variables": variables, "expected": expected, "metadata": metadata}, ensure_ascii=False
                )
                + "\n"
            )
        return
    if fmt != "csv":
        raise DomainError("format must be csv or jsonl.", code="invalid_format", field="format")
    buffer = io.StringIO()
    writer = FormulaSafeWriter(buffer)
    columns = list(version.variables)
    writer.writerow([*columns, "expected", "metadata"])
    for variables, expected, metadata in rows:
        writer.writerow(
            [variables.get(c, "") for c in columns]
            + [expected or "", json.dumps(metadata) if metadata else ""]
        )
        if buffer.tell() > 65536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
