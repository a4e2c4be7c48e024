"""Migration operations that are safe on a database that already has what they
make. The apps split out of playground (evals, sharing, webhooks) start from a
0001 whose tables a database upgraded from the playground-only schema already
holds; the squashed initial migrations create triggers an upgraded database has."""

from typing import Any

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import StateApps


class IfTableMissing(migrations.SeparateDatabaseAndState):
    """`operations` change the migration state always and the database only when
    `table` is missing: an app's tables made by the migrations its models moved out
    of are all there, or (a fresh database) none is."""

    def __init__(self, table: str, operations: list[Operation]) -> None:
        super().__init__(database_operations=operations, state_operations=operations)
        self.table = table

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__qualname__, [], {"table": self.table, "operations": self.state_operations}

    def _missing(self, schema_editor: BaseDatabaseSchemaEditor) -> bool:
        return self.table not in schema_editor.connection.introspection.table_names()

    def database_forwards(self, app_label: str, schema_editor: BaseDatabaseSchemaEditor,
                          from_state: Any, to_state: Any) -> None:
        if self._missing(schema_editor):
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def describe(self) -> str:
        return f"Create the models of {self.table}'s app unless {self.table} exists"


def postgresql_sql(create: str, drop: str) -> migrations.RunPython:
    """Run `create` forwards and `drop` backwards on PostgreSQL only (triggers and
    indexes SQLite has no form of). The SQL must be idempotent (CREATE OR REPLACE,
    DROP ... IF EXISTS before CREATE), so that it runs on an upgraded database too."""

    def run(sql: str) -> Any:
        def apply(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
            if schema_editor.connection.vendor == "postgresql":
                schema_editor.execute(sql, params=None)  # no %-interpolation of RAISE

        return apply

    return migrations.RunPython(run(create), run(drop))


def immutable_rows_sql(table: str, mutable: str | None = None) -> tuple[str, str]:
    """(create, drop) SQL of a PostgreSQL trigger that refuses any UPDATE of `table`'s
    rows changing a column other than `mutable` (a pointer cleared when an account goes)."""
    strip = f" - '{mutable}'" if mutable else ""
    create = f"""
CREATE OR REPLACE FUNCTION {table}_immutable() RETURNS trigger AS $$
BEGIN
    IF (to_jsonb(NEW){strip}) IS DISTINCT FROM (to_jsonb(OLD){strip}) THEN
        RAISE EXCEPTION '{table} rows are immutable'
            USING ERRCODE = 'restrict_violation', HINT = 'Make a new version instead.';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS {table}_immutable ON {table};
CREATE TRIGGER {table}_immutable BEFORE UPDATE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {table}_immutable();
"""
    drop = f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};"
    drop += f" DROP FUNCTION IF EXISTS {table}_immutable();"
    return create, drop


def move_content_types(from_app: str, to_app: str, models: list[str]) -> migrations.RunPython:
    """Give `models`' content types (and so their permissions) to `to_app`: rows an
    upgraded database made while the models were `from_app`'s. A fresh one has none."""

    def move(source: str, target: str) -> Any:
        def apply(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
            content_type = apps.get_model("contenttypes", "ContentType")
            names = [name.lower() for name in models]
            taken = set(content_type.objects.using(schema_editor.connection.alias)
                        .filter(app_label=target, model__in=names).values_list("model", flat=True))
            (content_type.objects.using(schema_editor.connection.alias)
             .filter(app_label=source, model__in=[n for n in names if n not in taken])
             .update(app_label=target))

        return apply

    return migrations.RunPython(move(from_app, to_app), move(to_app, from_app))
