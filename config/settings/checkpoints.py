"""Model checkpoints: `model_publish` (control plane) and the swarm that brings
them to every worker (inference_worker.checkpoints).

MODEL_CACHE_DIR: where a worker keeps checkpoints, <dir>/<model>/<version>/.
MODEL_PIECE_SIZE: torrent piece size in bytes for `model_publish` (a power of two,
  at least 16 KiB); 0 picks one by file size (see inference_client.checkpoints.torrents).
MODEL_WEB_SEED_EXPIRES: lifetime in seconds of the presigned URL a worker gives
  libtorrent as the web seed, at most PRESIGN_GET_MAX_EXPIRES (60 s); it is renewed
  at half its life.
MODEL_FETCH_STALL_S: a fetch that gains no verified byte for this long fails, naming
  what it knows (peers, the web seed's last answer).
MODEL_ORIGIN_FALLBACK_S: hosts downloading a version split which pieces each asks
  the object store for (inference_worker.checkpoints.origin_share); one that gains no
  piece for this long stops splitting and asks the store for whatever it lacks.
SWARM_LISTEN: address:port the swarm listens on (TLS over TCP; several, comma-
  separated, as libtorrent's listen_interfaces). Empty: the address this host
  advertises (SWARM_ADVERTISE_HOST, below), never every interface unless set so.
  Port 0 takes a free port, so several workers share a host; the port in use is in
  the heartbeat.
SWARM_ADVERTISE_HOST: the address other workers reach this one at; empty: the local
  address of the route to Redis (the network the workers share).
SWARM_UPLOAD_RATE_LIMIT, SWARM_DOWNLOAD_RATE_LIMIT: bytes/s for the whole worker
  process, every peer and the web seed included; 0 is unlimited.
SWARM_CERT_FILE, SWARM_KEY_FILE: this worker's swarm credential (PEM files that
  `manage.py swarm_credential` writes on the control plane); a peer without one of
  the same CA gets no piece (inference_protocol.swarm_credentials). Empty: a process
  that holds CONFIG_SIGNING_KEY (the control plane, the embedded default) issues its
  own; any other refuses to start a fetch.
SWARM_CREDENTIAL_DAYS: how long a credential issued by the control plane is valid.
The swarm is private whatever the settings: no DHT, local discovery, peer exchange,
UPnP or NAT-PMP (inference_worker.checkpoints.session).
SWARM_PEERS_REFRESH_S: how often a fetch reads peer addresses from Redis; a fetch
  also waits this long before its first request to the object store, so that hosts
  starting together split it (inference_worker.checkpoints.origin_share).
"""

from core.env import env_float, env_int, env_str

from .base import VAR_DIR

MODEL_CACHE_DIR = env_str("MODEL_CACHE_DIR", str(VAR_DIR / "models"))
MODEL_PIECE_SIZE = env_int("MODEL_PIECE_SIZE", 0)
MODEL_WEB_SEED_EXPIRES = env_int("MODEL_WEB_SEED_EXPIRES", 3600)
MODEL_FETCH_STALL_S = env_float("MODEL_FETCH_STALL_S", 120.0)
MODEL_ORIGIN_FALLBACK_S = env_float("MODEL_ORIGIN_FALLBACK_S", 10.0)
SWARM_LISTEN = env_str("SWARM_LISTEN", "")
SWARM_ADVERTISE_HOST = env_str("SWARM_ADVERTISE_HOST")
SWARM_UPLOAD_RATE_LIMIT = env_int("SWARM_UPLOAD_RATE_LIMIT", 0)
SWARM_DOWNLOAD_RATE_LIMIT = env_int("SWARM_DOWNLOAD_RATE_LIMIT", 0)
SWARM_CERT_FILE = env_str("SWARM_CERT_FILE", "")
SWARM_KEY_FILE = env_str("SWARM_KEY_FILE", "")
SWARM_CREDENTIAL_DAYS = env_int("SWARM_CREDENTIAL_DAYS", 365)
SWARM_PEERS_REFRESH_S = env_float("SWARM_PEERS_REFRESH_S", 2.0)
