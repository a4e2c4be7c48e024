"""`manage.py serve`: migrate, print the URL, serve ASGI; on SIGTERM, stop
gracefully (core/shutdown.py: SHUTDOWN_GRACE_S for what is in flight).

The README's run command ends here; it works the same on the embedded default
and with services (the environment decides). Only the embedded default that
scripts/run.sh starts (PROMPTYARD_EMBEDDED) creates the demo user.
"""

import functools
import os
import shutil
import socket

import uvicorn
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management import BaseCommand, CommandError, call_command
from django.utils.module_loading import import_string
from uvicorn.supervisors import Multiprocess

from core.shutdown import DEADLINE_HOOKS_S, GracefulServer
from core.startup import check_port, check_secret_key, check_services, serving

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "promptyard-demo"


class Command(BaseCommand):
    help = "Migrate, create the demo user, and serve HTTP + websockets with uvicorn."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true",
                            help="do not create the demo user (made only on the embedded default)")
        parser.add_argument("--workers", type=int, default=1,
                            help="server processes sharing the port (uvicorn workers)")

    def handle(self, *args, host, port, no_demo, workers, **options):
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded default's database file
        try:
            check_secret_key()
            check_port(host, port)
            check_services()  # the bucket made if missing
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        call_command("migrate", interactive=False, verbosity=0)
        url = f"http://{host}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"Promptyard is running at {url}"))
        if settings.EMBEDDED and not no_demo:
            users = get_user_model().objects
            if not users.filter(username=DEMO_USERNAME).exists():
                users.create_user(DEMO_USERNAME, password=DEMO_PASSWORD)
            self.stdout.write(f"Log in as {DEMO_USERNAME} / {DEMO_PASSWORD}")
        if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            # The processes' metrics are aggregated on every /metrics scrape.
            metrics_dir = settings.VAR_DIR / f"prometheus-{port}"
            shutil.rmtree(metrics_dir, ignore_errors=True)
            metrics_dir.mkdir(parents=True)
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
        serving.send(sender=self.__class__)
        config = uvicorn.Config(
            "config.asgi:application", host=host, port=port, log_level=settings.LOG_LEVEL.lower(),
            access_log=settings.ACCESS_LOG, lifespan="off", workers=workers,
            http="auto" if settings.ACCESS_LOG else import_string(settings.SERVE_HTTP_PROTOCOL),
            # The client address is the app's to work out, from TRUSTED_PROXIES
            # only (core/clientip.py): uvicorn would trust X-Forwarded-For from 127.0.0.1.
            proxy_headers=False,
            # Chat frames are small JSON: compressing each one cost ~7% of the
            # server's CPU per message (bench/chat.py, N = 200, schedstat) and saves
            # next to nothing on the wire.
            ws_per_message_deflate=False,
            # SIGTERM: the grace, then the deadline hooks; what is left after them is cancelled.
            timeout_graceful_shutdown=settings.SHUTDOWN_GRACE_S + DEADLINE_HOOKS_S)
        server = GracefulServer(config, settings.SHUTDOWN_GRACE_S)
        if workers > 1:  # as uvicorn.run, a supervisor relaying SIGTERM to each process
            Multiprocess(config, target=functools.partial(_serve_on_own_socket, server, host, port),
                         sockets=[]).run()
        else:
            server.run()


def _serve_on_own_socket(server: GracefulServer, host: str, port: int, sockets=None) -> None:
    """A worker process listening on a socket of its own on the shared port
    (SO_REUSEPORT): the kernel spreads connections evenly over the processes by
    their address. On one shared socket whichever process woke first took most
    of a burst (159 of wrk's 200 connections in one of two processes)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    server.run(sockets=[sock])
