"""Settings are chosen by environment variables only (see README).

Unset variables give the embedded default: SQLite, in-memory channel layer,
local-memory cache, local file store, in-process inference worker. Each topic
module documents its own variables.
"""

from .auth import *  # noqa: F403
from .base import *  # noqa: F403
from .celery import *  # noqa: F403
from .channels import *  # noqa: F403
from .chat import *  # noqa: F403
from .checkpoints import *  # noqa: F403
from .control import *  # noqa: F403
from .evals import *  # noqa: F403
from .generations import *  # noqa: F403
from .inference import *  # noqa: F403
from .prompts import *  # noqa: F403
from .ratelimits import *  # noqa: F403
from .sharing import *  # noqa: F403
from .storage import *  # noqa: F403
from .webhooks import *  # noqa: F403
