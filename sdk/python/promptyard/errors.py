"""What the SDK raises. Every error carries the server's stable `code` when
there was an answer, and the HTTP status."""

from __future__ import annotations


class PromptyardError(Exception):
    """Base class of every SDK error."""

    def __init__(self, message: str, *, code: str = "error", status: int | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


class ApiError(PromptyardError):
    """The server refused the request (a 4xx other than those below): bad input."""


class NotFound(PromptyardError):
    """The prompt (or the label on it) does not exist, or the key cannot see it."""


class LabelNotFound(NotFound):
    """The label does not exist on the prompt (never set, or removed). The cache
    never answers with an old version once the server has said so."""


class PromptNotFound(NotFound):
    """The prompt does not exist or this key cannot see it."""


class AuthenticationError(PromptyardError):
    """The API key is missing, unknown, revoked or expired (HTTP 401)."""


class ServerUnavailable(PromptyardError):
    """No usable answer: a 5xx, a 429, a timeout or a connection error, with no
    cached copy inside the staleness bound and no fallback given."""


class RenderError(PromptyardError):
    """Rendering failed: missing or unknown variables, or a value of a bad type."""

    def __init__(self, message: str, *, code: str, names: list[str]):
        super().__init__(message, code=code, status=None)
        self.names = names
