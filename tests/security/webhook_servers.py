"""Real servers for the webhook security tests: a TCP server that answers with a
script of its own (trickling, flooding), a certificate authority for a TLS
receiver, and a receiver that verifies deliveries with the SDK's verifier."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from promptyard.webhooks import WebhookVerificationError, verify


class RawServer:
    """Accepts connections on 127.0.0.1, reads the request head, then runs
    `answer(send)` where send(bytes) writes to the client. `sent` counts the bytes
    written; `cut` is set once a write fails (the client closed the connection)."""

    def __init__(self, answer):
        self.sent = 0
        self.cut = threading.Event()
        self._answer = answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk

            def send(data: bytes) -> None:
                conn.sendall(data)
                self.sent += len(data)
            try:
                self._answer(send)
            except OSError:
                self.cut.set()

    def close(self) -> None:
        self._listener.close()


def trickle(seconds: float, every_s: float = 0.2):
    """An answer that sends a status line and then a header one byte every `every_s`."""
    def answer(send):
        send(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            send(b"a")
            time.sleep(every_s)  # the receiver's pace: what this server does, not a wait on the test
    return answer


def endless_headers(limit: int):
    """200, then header lines, up to `limit` bytes, as fast as the client takes them."""
    def answer(send):
        send(b"HTTP/1.1 200 OK\r\n")
        line = b"X-Pad: " + b"a" * 1000 + b"\r\n"
        for _ in range(limit // len(line)):
            send(line)
    return answer


def endless_body(limit: int, chunk: int = 65536):
    """200, then up to `limit` bytes of body as fast as the client takes them."""
    def answer(send):
        send(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
             b"Content-Length: %d\r\n\r\n" % limit)
        block = b"x" * chunk
        for _ in range(limit // chunk):
            send(block)
    return answer


class Authority:
    """A certificate authority of the test: its certificate in a PEM file (for
    SSL_CERT_FILE) and server contexts for a name it signs."""

    def __init__(self, directory):
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Promptyard test CA")])
        self.cert = (self._builder(name, name, self._key.public_key())
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self._key, hashes.SHA256()))
        self.directory = directory
        self.ca_file = directory / "ca.pem"
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    @staticmethod
    def _builder(subject, issuer, public_key):
        now = datetime.datetime.now(datetime.UTC)
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(hours=1)))

    def server_context(self, hostname: str) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (self._builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)]),
                              self.cert.subject, key.public_key())
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
                .sign(self._key, hashes.SHA256()))
        cert_file, key_file = self.directory / f"{hostname}.pem", self.directory / f"{hostname}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        return context


class VerifyingReceiver:
    """A webhook receiver as a customer writes it: every POST is checked with
    promptyard.webhooks.verify; 200 and the event when it checks out, else 400 and
    the error's code. `results` holds (event or None, code or None, headers, body)."""

    def __init__(self, secret):
        self.secret = secret
        self.results: list[tuple] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    event, code = verify(body, self.headers, receiver.secret), None
                except WebhookVerificationError as exc:
                    event, code = None, exc.code
                receiver.results.append((event, code, dict(self.headers), body))
                self.send_response(400 if code else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
