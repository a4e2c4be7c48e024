"""Request bodies are bounded before they are read (core/bodylimit.py), on a live
`manage.py serve`: a body over its route's limit is a 413 (request_too_large,
naming the limit) while the client is still sending, chunked or not, and the
server's memory does not grow with the body.

Bodies go over a raw socket: an HTTP client library would send the whole body
before reading any answer."""

import http.client
import itertools
import json
import os
import select
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from django.conf import settings
from django.db import connection

from core.blobstore import LocalBlobStore, get_blob_store
from evals.datasets import dataset_create
from evals.models import DatasetRow, DatasetVersion
from inference_client.models import BatchFile
from tests.factories import ApiKeyFactory, UserFactory
from tests.livesubprocess import embedded_env, free_port, running_server

pytestmark = pytest.mark.needs_services  # the test database and the object store, shared with the server

MiB = 1024 * 1024
HUGE = 256 * MiB
# The serve process's peak RSS may grow this much while it refuses a 256 MiB body:
# what it reads before refusing is at most the spool Django keeps in memory
# (FILE_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB) and a few socket buffers; the rest is disk.
RSS_GROWTH_MAX = 32 * MiB
SMALL_LIMIT = MiB  # the file and import limits of the `small` server
MODEL = "bl-fixed-cost"
BOUNDARY = "bodylimit-boundary"


def _serve(django_db_blocker, **env: str):
    with django_db_blocker.unblock():
        db = connection.settings_dict
    port = free_port()
    env = dict(os.environ, DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
               LOG_LEVEL="WARNING", INFERENCE_MODELS=json.dumps({MODEL: {"engine": "fixed_cost"}}), **env)
    return running_server(["manage.py", "serve", "--no-demo", "--port", str(port)], env, port)


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    """`serve` with the default limits."""
    with _serve(django_db_blocker) as live:
        yield live


@pytest.fixture(scope="module")
def small(django_db_setup, django_db_blocker):
    """`serve` whose file and import limits are 1 MiB, so that a body just over one
    holds a valid file the routes would otherwise store."""
    with _serve(django_db_blocker, BATCH_REQUEST_MAX_BYTES=str(SMALL_LIMIT),
                EVAL_DATASET_REQUEST_MAX_BYTES=str(SMALL_LIMIT)) as live:
        yield live


class Answer:
    def __init__(self, status: int, body: bytes, finished: bool, sent: int):
        self.status, self.body, self.finished, self.sent = status, body, finished, sent

    def error(self) -> dict:
        return json.loads(self.body)["error"]


def _port(live) -> int:
    return int(live.base.rsplit(":", 1)[1])


def _read_answer(sock: socket.socket) -> tuple[int, bytes]:
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, response.read()


def post(live, path: str, chunks: Iterator[bytes], headers: dict | None = None,
         length: int | None = None) -> Answer:
    """POST a body, chunked unless its `length` is given, stopping as soon as an answer
    comes or the server closes the connection (`finished`: the whole body went out first)."""
    sent, finished = 0, False
    framing = {"Transfer-Encoding": "chunked"} if length is None else {"Content-Length": str(length)}
    with socket.create_connection(("127.0.0.1", _port(live)), timeout=60) as sock:
        head = {"Host": "127.0.0.1", **framing, **(headers or {})}
        sock.sendall(f"POST {path} HTTP/1.1\r\n".encode()
                     + "".join(f"{k}: {v}\r\n" for k, v in head.items()).encode() + b"\r\n")
        try:
            for chunk in filter(None, chunks):  # an empty chunk would end a chunked body
                if select.select([sock], [], [], 0)[0]:
                    break  # answered (or closed) while the client is still sending
                sock.sendall(chunk if length is not None else b"%x\r\n%b\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            else:
                if length is None:
                    sock.sendall(b"0\r\n\r\n")
                finished = True
        except (BrokenPipeError, ConnectionResetError):
            pass
        status, body = _read_answer(sock)
    return Answer(status, body, finished, sent)


def repeat(head: bytes, filler: bytes, total: int, tail: bytes = b"") -> Iterator[bytes]:
    """`head`, `filler` repeated (in blocks of about 64 KiB) to `total` bytes in all, `tail`."""
    yield head
    count = (total - len(head) - len(tail)) // len(filler)
    per_block = max(1, 65536 // len(filler))
    for start in range(0, count, per_block):
        yield filler * min(per_block, count - start)
    if tail:
        yield tail


def pieces(data: bytes) -> Iterator[bytes]:
    return (data[i:i + 65536] for i in range(0, len(data), 65536))


def form_head(filename: str, **fields: str) -> bytes:
    """A multipart body's start: `fields`, then the header of the part `file`."""
    head = "".join(f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
                   for k, v in fields.items())
    part = f'Content-Disposition: form-data; name="file"; filename="{filename}"'
    return f"{head}--{BOUNDARY}\r\n{part}\r\nContent-Type: application/octet-stream\r\n\r\n".encode()


FORM_TAIL = f"\r\n--{BOUNDARY}--\r\n".encode()
MULTIPART = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
JSON = {"Content-Type": "application/json"}


def _jsonl_line(i: int) -> bytes:
    request = {"model": MODEL, "messages": [{"role": "user", "content": "x" * 40}]}
    line = {"custom_id": f"r-{i}", "method": "POST", "url": "/v1/chat/completions", "body": request}
    return json.dumps(line).encode() + b"\n"


def _upload(head: bytes, rows: Iterator[bytes], total: int) -> bytes:
    """A multipart body of at most `total` bytes: `head`, as many rows as fit, the tail."""
    room, content = total - len(head) - len(FORM_TAIL), []
    for row in rows:
        if len(row) > room:
            break
        content.append(row)
        room -= len(row)
    return head + b"".join(content) + FORM_TAIL


def jsonl_upload(total: int) -> bytes:
    """A valid Batch API file (distinct custom_ids) for /v1/files."""
    return _upload(form_head("in.jsonl", purpose="batch"), map(_jsonl_line, itertools.count()), total)


def csv_upload(total: int) -> bytes:
    """A valid CSV for a dataset import: a header, then one two-column row after another."""
    rows = itertools.chain([b"question,expected\n"], itertools.repeat(b"abcdefghij,jihgfedcba\n"))
    return _upload(form_head("rows.csv"), rows, total)


class PeakRss:
    """The growth of a process's peak RSS over a block (Linux: VmHWM, reset by clear_refs)."""

    def __init__(self, pid: int):
        self.pid = pid

    def __enter__(self):
        self.before = psutil.Process(self.pid).memory_info().rss
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # peak := current
        return self

    def __exit__(self, *exc):
        status = Path(f"/proc/{self.pid}/status").read_text()
        peak_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
        self.growth = peak_kb * 1024 - self.before


def _assert_refused(answer: Answer, setting: str, limit: int) -> None:
    assert answer.status == 413, (answer.status, answer.body[:300])
    error = answer.error()
    assert (error["code"], error["limit"], error["max_bytes"]) == ("request_too_large", setting, limit)
    assert not answer.finished and answer.sent < HUGE  # refused while the client was still sending


# A fixed id: the body is refused before any view looks it up, and test ids must be
# the same in every pytest-xdist process.
ANY_DATASET = "00000000-0000-4000-8000-000000000001"
HUGE_BODIES = {
    "v1-chat": ("/v1/chat/completions", "INFERENCE_MAX_BODY_BYTES",
                lambda: repeat(b'{"model": "m", "messages": [{"role": "user", "content": "', b"x", HUGE),
                {**JSON, "Authorization": "Bearer sk-none"}),
    "drf": ("/api/prompts/", "REQUEST_MAX_BYTES", lambda: repeat(b'{"title": "', b"x", HUGE), JSON),
    "signup-api": ("/api/accounts/signup", "REQUEST_MAX_BYTES",
                   lambda: repeat(b'{"username": "', b"a", HUGE), JSON),
    "signup-page": ("/signup/", "REQUEST_MAX_BYTES", lambda: repeat(b"username=", b"a", HUGE),
                    {"Content-Type": "application/x-www-form-urlencoded"}),
    "files": ("/v1/files", "BATCH_REQUEST_MAX_BYTES",
              lambda: repeat(form_head("in.jsonl", purpose="batch"), _jsonl_line(0), HUGE, FORM_TAIL),
              MULTIPART),
    "dataset-import": (f"/api/datasets/{ANY_DATASET}/import", "EVAL_DATASET_REQUEST_MAX_BYTES",
                       lambda: repeat(form_head("rows.csv") + b"question,expected\n", b"abc,cba\n", HUGE,
                                      FORM_TAIL), MULTIPART),
    "blob-put": ("/api/prompts/blobs/local/token", "PROMPT_BODY_MAX_BYTES",
                 lambda: repeat(b"", b"x", HUGE), {}),
}


@pytest.mark.parametrize("route", HUGE_BODIES)
def test_a_256_mb_chunked_body_is_refused_while_sending_without_growing_memory(server, route):
    path, setting, chunks, headers = HUGE_BODIES[route]
    with PeakRss(server.proc.pid) as rss:
        answer = post(server, path, chunks(), headers)
    _assert_refused(answer, setting, getattr(settings, setting))
    assert rss.growth < RSS_GROWTH_MAX, f"peak RSS grew {rss.growth / MiB:.1f} MiB"


@pytest.mark.parametrize(("path", "setting"), [
    ("/v1/chat/completions", "INFERENCE_MAX_BODY_BYTES"), ("/api/prompts/", "REQUEST_MAX_BYTES"),
    ("/v1/files", "BATCH_REQUEST_MAX_BYTES"),
    (f"/api/datasets/{ANY_DATASET}/import", "EVAL_DATASET_REQUEST_MAX_BYTES"),
])
def test_a_content_length_over_the_limit_is_refused_before_any_body_byte_is_read(server, path, setting):
    limit = getattr(settings, setting)
    with socket.create_connection(("127.0.0.1", _port(server)), timeout=20) as sock:
        # No body follows: a server waiting for it would time out. Expect: 100-continue
        # is answered with 100 only by a server that starts reading the body.
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {limit + 1}\r\nExpect: 100-continue\r\n\r\n".encode())
        status, raw = _read_answer(sock)
    assert status == 413
    error = json.loads(raw)["error"]
    assert (error["code"], error["limit"], error["max_bytes"]) == ("request_too_large", setting, limit)


@pytest.fixture
def key(transactional_db):
    """(ApiKey, raw key) of a new user."""
    return ApiKeyFactory.create_with_raw(user=UserFactory())


def _auth(key) -> dict:
    return {**MULTIPART, "Authorization": f"Bearer {key[1]}"}


def _batch_objects() -> int:
    store = get_blob_store()
    return len(store.client.list_objects_v2(Bucket=store.bucket, Prefix="batch-files/").get("Contents", []))


def test_a_refused_upload_leaves_no_object_in_the_store(small, key):
    before = _batch_objects()
    data = jsonl_upload(SMALL_LIMIT * 3 // 2)  # declared: a chunked file never reaches Django's parser
    answer = post(small, "/v1/files", pieces(data), _auth(key), length=len(data))
    assert answer.status == 413 and answer.error()["limit"] == "BATCH_REQUEST_MAX_BYTES"
    assert _batch_objects() == before and not BatchFile.objects.exists()


def test_an_upload_just_under_the_limit_is_stored(small, key):
    before = _batch_objects()
    data = jsonl_upload(SMALL_LIMIT)
    assert SMALL_LIMIT - 200 < len(data) <= SMALL_LIMIT
    # With a Content-Length, as clients send files: Django reads no multipart body without one.
    answer = httpx.post(f"{small.base}/v1/files", content=data, headers=_auth(key), timeout=60)
    assert answer.status_code == 200, answer.text
    assert BatchFile.objects.get(pk=answer.json()["id"]).lines > 5000
    assert _batch_objects() == before + 1


@pytest.fixture
def dataset(key):
    return dataset_create(owner=key[0].user, name="limits")


def test_a_refused_import_leaves_no_rows(small, key, dataset):
    data = csv_upload(SMALL_LIMIT * 3 // 2)
    answer = post(small, f"/api/datasets/{dataset.pk}/import", pieces(data), _auth(key), length=len(data))
    assert answer.status == 413 and answer.error()["limit"] == "EVAL_DATASET_REQUEST_MAX_BYTES"
    assert not DatasetVersion.objects.filter(dataset=dataset).exists() and not DatasetRow.objects.exists()


def test_an_import_just_under_the_limit_is_imported(small, key, dataset):
    data = csv_upload(SMALL_LIMIT)
    assert SMALL_LIMIT - 30 < len(data) <= SMALL_LIMIT
    answer = httpx.post(f"{small.base}/api/datasets/{dataset.pk}/import", content=data, headers=_auth(key),
                        timeout=120)
    assert answer.status_code == 201, answer.text
    assert DatasetRow.objects.filter(version__dataset=dataset).count() > 40_000


def test_a_chat_body_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(server, key):
    limit = settings.INFERENCE_MAX_BODY_BYTES
    request = b'{"model": "no-such-model", "messages": [{"role": "user", "content": "hi"}]}'
    headers = {**JSON, "Authorization": f"Bearer {key[1]}"}
    at_limit = post(server, "/v1/chat/completions", repeat(request, b" ", limit), headers)
    assert at_limit.finished and at_limit.status == 404 and at_limit.error()["code"] == "model_not_found"
    over = post(server, "/v1/chat/completions", repeat(request, b" ", limit + 1), headers)
    assert over.status == 413 and over.error()["limit"] == "INFERENCE_MAX_BODY_BYTES"


def test_a_local_blob_put_is_written_as_it_comes_not_held_in_memory(tmp_path, settings):
    """The embedded store's upload PUT (core/blob_views.py): a 40 MiB body (under
    PROMPT_BODY_MAX_BYTES) is stored whole while the server's peak RSS grows by less
    than RSS_GROWTH_MAX (holding it, and joining it, took twice the body)."""
    port = free_port()
    env = embedded_env(tmp_path, SECRET_KEY=settings.SECRET_KEY, LOG_LEVEL="WARNING",
                       INFERENCE_MODELS=json.dumps({MODEL: {"engine": "fixed_cost"}}))
    data = os.urandom(40 * MiB)
    key = f"uploads/{uuid.uuid4().hex}"
    token = LocalBlobStore(root=tmp_path / "blobs").sign(key, "PUT", len(data), expires=120)
    with running_server(["manage.py", "serve", "--no-demo", "--port", str(port)], env, port) as live:
        with PeakRss(live.proc.pid) as rss:
            put = httpx.put(f"{live.base}/api/prompts/blobs/local/{token}", content=data, timeout=120)
    assert put.status_code == 200, put.text
    assert (tmp_path / "blobs" / key).read_bytes() == data
    assert rss.growth < RSS_GROWTH_MAX, f"peak RSS grew {rss.growth / MiB:.1f} MiB"
