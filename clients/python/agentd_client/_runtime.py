"""What the generated operations stand on: one HTTP exchange (urllib), the error envelope as an
exception, and the JSON conversions the generated dataclasses use. Standard library only."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import is_dataclass
from typing import Any, Callable, Mapping, Optional, TypeVar

T = TypeVar("T")


class AgentdError(Exception):
    """An answer that is not a success: the contract's error envelope, as the server sent it.

    ``status`` is the HTTP status, ``code``/``message``/``request_id``/``details`` the envelope's
    fields, ``envelope`` the whole parsed body (None when the body was not an envelope, e.g. a
    proxy's page), ``retry_after`` the Retry-After header in seconds when there was one."""

    def __init__(self, status: int, envelope: Optional[dict[str, Any]], retry_after: Optional[float] = None, text: str = "") -> None:
        error = (envelope or {}).get("error") or {}
        self.status = status
        self.envelope = envelope
        self.code: str = error.get("code") or f"http_{status}"
        self.message: str = error.get("message") or (text[:200] if text else f"HTTP {status}")
        self.request_id: Optional[str] = error.get("requestId")
        self.details: Any = error.get("details")
        self.retry_after = retry_after
        super().__init__(f"{self.code}: {self.message} (HTTP {status})")


def same(value: Any) -> Any:
    return value


def from_list(read: Callable[[Any], T]) -> Callable[[Any], list[T]]:
    return lambda values: [read(value) for value in values]


def from_optional(read: Callable[[Any], T]) -> Callable[[Any], Optional[T]]:
    return lambda value: None if value is None else read(value)


def to_json(value: Any) -> Any:
    """A generated dataclass, a list or a dict of them, as JSON-ready values."""
    if is_dataclass(value) and not isinstance(value, type):
        return value._to_json()  # type: ignore[attr-defined]
    if isinstance(value, list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    return value


class Transport:
    """Sends one request and reads its JSON answer; raises AgentdError for anything but success."""

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: float = 60.0) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http or https URL, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    @staticmethod
    def quote(path_id: str) -> str:
        return urllib.parse.quote(str(path_id), safe="")

    @staticmethod
    def body(body: Any, fields: Mapping[str, Any], required: list[str]) -> dict[str, Any]:
        """The request body: the dataclass given, or the keyword fields that are not None."""
        given = {key: value for key, value in fields.items() if value is not None}
        if body is not None:
            if given:
                raise TypeError("pass the body as a dataclass or as keyword arguments, not both")
            return to_json(body)
        missing = [name for name in required if name not in given]
        if missing:
            raise TypeError(f"missing body field(s): {', '.join(missing)}")
        return {key: to_json(value) for key, value in given.items()}

    def headers(self, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        headers = {"accept": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        headers.update(extra or {})
        return headers

    def url(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        pairs = [(key, _query_value(value)) for key, value in (query or {}).items() if value is not None]
        return self.base_url + path + (("?" + urllib.parse.urlencode(pairs)) if pairs else "")

    def open(self, method: str, path: str, query: Optional[Mapping[str, Any]] = None, body: Any = None, headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Any:
        """The raw response of a successful request (the caller reads and closes it)."""
        data = None
        all_headers = self.headers(headers)
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            all_headers["content-type"] = "application/json"
        request = urllib.request.Request(self.url(path, query), data=data, method=method, headers=all_headers)
        try:
            return urllib.request.urlopen(request, timeout=self.timeout if timeout is None else timeout)
        except urllib.error.HTTPError as error:
            raise error_of(error) from None

    def call(self, method: str, path: str, query: Optional[Mapping[str, Any]], body: Any, status: int) -> Any:
        with self.open(method, path, query, body) as response:
            text = response.read().decode("utf-8")
        if status == 204 or text == "":
            return None
        return json.loads(text)


def error_of(error: urllib.error.HTTPError) -> AgentdError:
    text = error.read().decode("utf-8", "replace")
    try:
        envelope = json.loads(text)
        if not isinstance(envelope, dict) or not isinstance(envelope.get("error"), dict):
            envelope = None
    except ValueError:
        envelope = None
    retry_after = error.headers.get("retry-after") if error.headers else None
    try:
        seconds = float(retry_after) if retry_after is not None else None
    except ValueError:
        seconds = None
    return AgentdError(error.code, envelope, seconds, text)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
