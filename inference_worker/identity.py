"""This worker process's name in heartbeats and the swarm."""

from __future__ import annotations

import os
import socket

WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"
