"""Single-row INSERTs, UPDATEs and lookups on a turn's path, with their SQL written once per model and database.

Why: for the few statements every turn runs (admission's user message and run, the assistant message, the final
save), building the statement through the ORM's query compiler cost more CPU than the database spent running it.
Values still go through each field's own `pre_save` and `get_db_prep_save`, so defaults, `auto_now(_add)`, JSON
and time zones come out exactly as `Model.save()` and `QuerySet.update()` would write them; statements go through
the connection's cursor, so execute wrappers (tracing, query counting) still see them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connections, router
from django.db.models import NOT_PROVIDED, DateField, DateTimeField, Field, Model
from django.db.models.signals import post_save, pre_save
from django.utils import timezone


def row_insert[M: Model](obj: M) -> M:
    """Insert `obj` as `obj.save(force_insert=True)` would, and set its primary key; a model with save receivers
    (pre_save/post_save, for example a host project's) or a database-side default is saved through the ORM."""
    model = type(obj)
    alias = router.db_for_write(model, instance=obj)
    if pre_save.has_listeners(model) or post_save.has_listeners(model):
        obj.save(using=alias, force_insert=True)
        return obj
    conn = connections[alias]
    sql, fields, auto = _insert_sql(model, alias)
    values = [f.pre_save(obj, True) for f in fields]
    if any(hasattr(v, "resolve_expression") for v in values):  # db_default and other expressions: the ORM's job
        obj.save(using=alias, force_insert=True)
        return obj
    params = [f.get_db_prep_save(v, connection=conn) for f, v in zip(fields, values, strict=True)]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        if auto is not None:
            pk = cursor.fetchone()[0] if conn.features.can_return_columns_from_insert else conn.ops.last_insert_id(
                cursor, model._meta.db_table, str(auto.column))
            setattr(obj, auto.attname, pk)
    obj._state.adding = False
    obj._state.db = alias
    return obj


def row_create(model: type[Model], values: Mapping[str, Any]) -> Any:
    """Insert a row of `model` as `model(**values).save(force_insert=True)` would and return its primary key, without
    building the instance: `values` maps field names (attnames for foreign keys) to values, the other fields take
    their defaults. A model that `row_insert` would save through the ORM, or with a field whose `pre_save` does more
    than `auto_now(_add)`, is saved through `row_insert`."""
    alias = router.db_for_write(model)
    plan = _create_plan(model, alias)
    if plan is None or pre_save.has_listeners(model) or post_save.has_listeners(model):
        return row_insert(model(**values)).pk
    unknown = values.keys() - plan.names
    if unknown:
        raise TypeError(f"{model.__name__} has no field {sorted(unknown)[0]!r} (foreign keys by attname)")
    conn = connections[alias]
    now: Any = None  # one instant, prepared once, for every auto_now(_add) field of the row (save() reads the clock per field)
    params: list[Any] = []
    pk = None
    for field, kind, const in plan.fields:
        if field.attname in values:
            value = values[field.attname]
        elif kind == _CONST:
            params.append(const)
            continue
        elif kind == _NOW:
            if now is None:
                now = field.get_db_prep_save(timezone.now(), connection=conn)
            params.append(now)
            continue
        else:
            value = field.get_default()
        if field.primary_key:
            pk = value
        params.append(field.get_db_prep_save(value, connection=conn))
    with conn.cursor() as cursor:
        cursor.execute(plan.sql, params)
        if plan.auto is not None:
            pk = cursor.fetchone()[0] if conn.features.can_return_columns_from_insert else conn.ops.last_insert_id(
                cursor, model._meta.db_table, str(plan.auto.column))
    return pk


def row_update(model: type[Model], pk: Any, where: Mapping[str, Any], values: Mapping[str, Any]) -> int:
    """`model.objects.filter(pk=pk, **where).update(**values)` for plain field names and values (no lookups, no
    expressions); returns the number of rows changed (0 or 1)."""
    alias = router.db_for_write(model)
    conn = connections[alias]
    sql, set_fields, where_fields = _update_sql(model, alias, tuple(values), tuple(where))
    params = [f.get_db_prep_save(values[f.name], connection=conn) for f in set_fields]
    params += [f.get_db_prep_value(where[f.name], connection=conn, prepared=False) for f in where_fields]
    params.append(model._meta.pk.get_db_prep_value(pk, connection=conn, prepared=False))
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)


def row_values(model: type[Model], columns: Sequence[str], where: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The raw column values of `columns` (field names) of the first row matching `where` (field name -> value,
    equality only), or None; values as the database driver returns them."""
    alias = router.db_for_read(model)
    conn = connections[alias]
    sql, where_fields = _select_sql(model, alias, tuple(columns), tuple(where))
    params = [f.get_db_prep_value(where[f.name], connection=conn, prepared=False) for f in where_fields]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return tuple(row) if row is not None else None


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    """The concrete field called `name` (or with that attname) of `model`."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.column, f"{model.__name__}.{name} is not a column"
    return field


def _col(alias: str, field: Field[Any, Any]) -> str:
    return connections[alias].ops.quote_name(str(field.column))


def column(alias: str, model: type[Model], name: str) -> str:
    """The quoted column of `model`'s field `name` (or attname) on database `alias`, for SQL written once."""
    return _col(alias, _field(model, name))


@cache
def _insert_sql(model: type[Model], alias: str) -> tuple[str, list[Field[Any, Any]], Field[Any, Any] | None]:
    conn = connections[alias]
    meta = model._meta
    auto = meta.auto_field
    fields = [f for f in meta.local_concrete_fields if not f.generated and f is not auto]
    sql = (f"INSERT INTO {conn.ops.quote_name(meta.db_table)} ({', '.join(_col(alias, f) for f in fields)}) "
           f"VALUES ({', '.join(['%s'] * len(fields))})")
    if auto is not None and conn.features.can_return_columns_from_insert:
        sql += f" RETURNING {_col(alias, auto)}"
    return sql, fields, auto


_CONST, _NOW, _DEFAULT = 0, 1, 2  # a field's value when not given: prepared once; the row's instant; get_default()


@dataclass(frozen=True)
class _CreatePlan:
    sql: str
    fields: list[tuple[Field[Any, Any], int, Any]]  # (field, kind, prepared default for _CONST)
    auto: Field[Any, Any] | None
    names: frozenset[str]


@cache
def _create_plan(model: type[Model], alias: str) -> _CreatePlan | None:
    """How `row_create` builds each column's value; None when a field's `pre_save` or default needs the ORM."""
    conn = connections[alias]
    sql, fields, auto = _insert_sql(model, alias)
    plan: list[tuple[Field[Any, Any], int, Any]] = []
    for f in fields:
        if f.db_default is not NOT_PROVIDED or type(f).pre_save not in _PLAIN_PRE_SAVE:
            return None
        if isinstance(f, DateField) and (f.auto_now or f.auto_now_add):
            if not isinstance(f, DateTimeField):
                return None  # a date, not an instant: the ORM's job
            plan.append((f, _NOW, None))
        elif f.has_default() and callable(f.default) and f.default not in (list, dict):
            plan.append((f, _DEFAULT, None))  # uuid4, timezone.now, ...: a fresh value per row
        else:  # a constant (an empty list or dict is the same JSON every time): prepared once
            plan.append((f, _CONST, f.get_db_prep_save(f.get_default(), connection=conn)))
    return _CreatePlan(sql, plan, auto, frozenset(f.attname for f in fields))


_PLAIN_PRE_SAVE = (Field.pre_save, DateField.pre_save, DateTimeField.pre_save)


@cache
def _update_sql(model: type[Model], alias: str, names: tuple[str, ...], where: tuple[str, ...]) -> tuple[
        str, list[Field[Any, Any]], list[Field[Any, Any]]]:
    set_fields = [_field(model, n) for n in names]
    where_fields = [_field(model, n) for n in where]
    conditions = [f"{_col(alias, f)} = %s" for f in [*where_fields, model._meta.pk]]
    sql = (f"UPDATE {connections[alias].ops.quote_name(model._meta.db_table)} "
           f"SET {', '.join(f'{_col(alias, f)} = %s' for f in set_fields)} WHERE {' AND '.join(conditions)}")
    return sql, set_fields, where_fields


@cache
def _select_sql(model: type[Model], alias: str, columns: tuple[str, ...], where: tuple[str, ...]) -> tuple[str, list[Field[Any, Any]]]:
    where_fields = [_field(model, n) for n in where]
    cols = ", ".join(_col(alias, _field(model, c)) for c in columns)
    conditions = " AND ".join(f"{_col(alias, f)} = %s" for f in where_fields) or "1 = 1"
    return f"SELECT {cols} FROM {connections[alias].ops.quote_name(model._meta.db_table)} WHERE {conditions} LIMIT 1", where_fields
