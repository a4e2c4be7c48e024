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
SWARM_LISTEN: interface:port of the swarm (TCP, and UDP for the DHT). Port 0 takes a
  free port, so several workers share a host; the port in use is in the heartbeat.
SWARM_ADVERTISE_HOST: the address other workers reach this one at; empty: the local
  address of the route to Redis (the network the workers share).
SWARM_UPLOAD_RATE_LIMIT, SWARM_DOWNLOAD_RATE_LIMIT: bytes/s for the whole worker
  process, every peer and the web seed included; 0 is unlimited.
SWARM_DHT: join the DHT (bootstrapped from peers learnt through Redis and saved
  between runs), so that a swarm outlives Redis.
SWARM_PEERS_REFRESH_S: how often a fetch reads peer addresses from Redis; a fetch
  also waits this long before its first request to the object store, so that hosts
  starting together split it (inference_worker.checkpoints.origin_share).
"""

from core.env import env_bool, env_float, env_int, env_str

from .base import VAR_DIR

MODEL_CACHE_DIR = env_str("MODEL_CACHE_DIR", str(VAR_DIR / "models"))
MODEL_PIECE_SIZE = env_int("MODEL_PIECE_SIZE", 0)
MODEL_WEB_SEED_EXPIRES = env_int("MODEL_WEB_SEED_EXPIRES", 3600)
MODEL_FETCH_STALL_S = env_float("MODEL_FETCH_STALL_S", 120.0)
MODEL_ORIGIN_FALLBACK_S = env_float("MODEL_ORIGIN_FALLBACK_S", 10.0)
SWARM_LISTEN = env_str("SWARM_LISTEN", "0.0.0.0:0")
SWARM_ADVERTISE_HOST = env_str("SWARM_ADVERTISE_HOST")
SWARM_UPLOAD_RATE_LIMIT = env_int("SWARM_UPLOAD_RATE_LIMIT", 0)
SWARM_DOWNLOAD_RATE_LIMIT = env_int("SWARM_DOWNLOAD_RATE_LIMIT", 0)
SWARM_DHT = env_bool("SWARM_DHT", True)
SWARM_PEERS_REFRESH_S = env_float("SWARM_PEERS_REFRESH_S", 2.0)
