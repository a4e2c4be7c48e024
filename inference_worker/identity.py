"""This worker process's name in heartbeats, device states and the swarm."""

from __future__ import annotations

import os
import socket

WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"
