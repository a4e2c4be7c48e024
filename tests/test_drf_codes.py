"""The codes Django REST framework makes (its exceptions', its serializer fields'
and validators') reach an API answer only as registered codes: their own where
core/error_codes.py registers them, else the fallback core/errors.py names."""

import importlib
import inspect

from django.core import validators as django_validators
from django.test import RequestFactory
from rest_framework import exceptions, fields, relations, serializers
from rest_framework import validators as drf_validators
from rest_framework.exceptions import ErrorDetail, ValidationError

from accounts.serializers import SignupSerializer
from core.error_codes import CODES
from core.errors import api_exception_handler
from tests.layout import CODE_PACKAGES, ROOT


def drf_codes() -> set[str]:
    """Every code DRF's fields, serializers and validators (its own and Django's) can
    put in a ValidationError, and its exceptions' default codes."""
    codes: set[str] = set()
    for module in (fields, relations, serializers):
        for obj in vars(module).values():
            if inspect.isclass(obj):
                codes.update(getattr(obj, "default_error_messages", {}))
    for module in (drf_validators, django_validators):
        codes.update(obj.code for obj in vars(module).values()
                     if inspect.isclass(obj) and isinstance(getattr(obj, "code", None), str))
    codes.update(obj.default_code for obj in vars(exceptions).values()
                 if inspect.isclass(obj) and issubclass(obj, exceptions.APIException))
    return codes


def _sent(exc: Exception) -> dict:
    return api_exception_handler(exc, {"request": RequestFactory().post("/api/x")}).data["error"]


def test_every_code_drf_makes_goes_out_as_a_registered_code():
    assert {"required", "max_length", "invalid", "not_found"} <= drf_codes()
    for code in sorted(drf_codes() | {"a_code_a_later_drf_adds"}):
        sent = _sent(ValidationError({"name": [ErrorDetail("bad", code=code)]}))["code"]
        assert sent == (code if code in CODES else "invalid_request"), code
    for exc_class in vars(exceptions).values():
        if inspect.isclass(exc_class) and issubclass(exc_class, exceptions.APIException) \
                and exc_class is not exceptions.ValidationError:
            named = exc_class in (exceptions.MethodNotAllowed, exceptions.UnsupportedMediaType)
            exc = exc_class("x") if named else exc_class()  # the method, the media type
            assert _sent(exc)["code"] in CODES, exc_class


def _serializers() -> list[type[serializers.Serializer]]:
    found = []
    for app in CODE_PACKAGES:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("").as_posix()
            if "/migrations/" in rel or "/management/" in rel or "Serializer)" not in path.read_text():
                continue
            module = importlib.import_module(rel.replace("/", "."))
            found += [obj for obj in vars(module).values() if inspect.isclass(obj)
                      and issubclass(obj, serializers.Serializer) and obj.__module__ == module.__name__]
    return found


def _field_codes(serializer: serializers.Serializer) -> set[str]:
    codes = set(serializer.error_messages)
    for field in serializer.fields.values():
        codes.update(field.error_messages)
        codes.update(v.code for v in field.validators if isinstance(getattr(v, "code", None), str))
        child = getattr(field, "child", None) or getattr(field, "child_relation", None)
        if isinstance(child, serializers.Serializer):
            codes |= _field_codes(child)
        elif child is not None:
            codes.update(child.error_messages)
        if isinstance(field, serializers.Serializer):
            codes |= _field_codes(field)
    return codes


def test_our_serializers_answer_with_their_own_registered_codes():
    """A code one of our serializers can answer with (but DRF's generic `invalid`)
    is registered under its own name: no client sees it renamed."""
    classes = _serializers()
    assert SignupSerializer in classes
    unregistered = {code: cls.__name__ for cls in classes for code in _field_codes(cls())
                    if code not in CODES and code != "invalid"}
    assert not unregistered, f"register these in core/error_codes.py: {unregistered}"


def test_a_missing_field_answers_required_naming_the_field():
    serializer = SignupSerializer(data={"password": "x" * 12})
    assert not serializer.is_valid()
    error = _sent(ValidationError(serializer.errors))
    assert (error["code"], error["field"]) == ("required", "username")
    assert CODES["required"].status == 400
