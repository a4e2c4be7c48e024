"""One ASGI app for HTTP and websockets (served by uvicorn: manage.py serve)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Django must be set up before importing anything that touches models.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from accounts.websocket import ApiKeyWebsocketMiddleware  # noqa: E402
from config.routing import websocket_urlpatterns  # noqa: E402
from core.asgi import ApiHandler, PrefixRouter  # noqa: E402
from core.bodylimit import BodyLimitMiddleware  # noqa: E402
from core.startup import check_secret_key, tune_gc  # noqa: E402
from inference_client.control.documents import PublishedFloor  # noqa: E402
from inference_client.refusals import RefusalGate  # noqa: E402
from inference_protocol.config import start_watcher  # noqa: E402
from inference_protocol.config_floor import add_floor_store  # noqa: E402

check_secret_key()
if settings.CONFIG_SIGNING_KEY:  # the control plane: its published documents are its config floor
    add_floor_store(PublishedFloor())
# The newest signed config document, then its pub/sub and poll (inference_protocol.config).
start_watcher()

# /v1 (the OpenAI-compatible API) skips the page middleware: see core/asgi.py.
generation_paths = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings")
api_app = ApiHandler(settings.API_MIDDLEWARE, signal_free=generation_paths)

# First, a key its requests bucket refused is refused again from memory until its
# Retry-After (inference_client/refusals.py; under `serve`, from the request's headers,
# before its task: config/http.py); then every request body is bounded before the app
# reads it (core/bodylimit.py).
refusal_gate = RefusalGate(BodyLimitMiddleware(PrefixRouter({"/v1/": api_app}, default=django_asgi_app),
                                               settings.REQUEST_BODY_LIMITS), generation_paths)
application = ProtocolTypeRouter(
    {
        "http": refusal_gate,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(ApiKeyWebsocketMiddleware(URLRouter(websocket_urlpatterns)))
        ),
    }
)
tune_gc()
