"""Checkpoint distribution benchmark (issue #15), run by hand against PostgreSQL,
Redis and S3 (export what scripts/test.sh sets: DATABASE_URL, REDIS_URL, S3_*):

    .venv/bin/python bench/distribution.py [--hosts 16 32] [--size-mb 48] [--rate-mb 4]
                                           [--strategies naive,tree,swarm] [--quick] [--memory]
                                           [--outage SECONDS]

It publishes a checkpoint of random bytes with model_publish's service (in a
database of its own, <db>_bench, kept between runs so that migrations run once),
starts K host processes (max K of --hosts), each with its upload and download
capped at R bytes/s, behind an origin (the S3 server through tests' origin proxy)
whose link is capped at R too, and runs each strategy on them in turn, each run
with a fresh libtorrent session and cache directory in every host (real sessions
on 127.0.0.1). The clock starts when every host is told to go.

- naive: every host pulls from the origin only (the web seed; no peers);
- tree: whole copies down a binary tree: the root pulls from the origin, and each
  host, once it holds a verified copy, serves it to its two children;
- swarm: ours (peers from the heartbeats in Redis, the origin as web seed).

One line per strategy: the time until every host has a verified copy, p50/p99
per host as ratios to the bound M / R, what the origin sent (in copies), the hosts'
CPU time and peak RSS, and the load average (2 shared cores: a loaded machine
shows in the CPU line, not in the ratios, since links are capped well below what
the CPUs move). --memory fetches a 1 GB checkpoint on two uncapped hosts and
prints their peak RSS (the goal: at most 200 MB each). --outage S: one host
fetches from the origin alone, which goes down three times for S seconds (the
transfer cut, then S3's 503 to every request); printed: for each return, the
seconds until the web seed's bytes flow again (the goal: at most 2). --quick: K = 8, 8 MB at
8 MB/s, all three strategies in under a minute; with a 1 s bound, a fetch's fixed
costs (about 1 s: manifest, torrent, web-seed check, one peer refresh before the
first origin request, the final SHA-256) dominate its ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
if not os.environ.get("CONFIG_SIGNING_KEY"):  # publishing signs; hosts (inheriting it) issue their credential
    from inference_protocol.signing import generate_keypair

    os.environ["CONFIG_SIGNING_KEY"], os.environ["CONFIG_PUBLIC_KEY"] = generate_keypair()
MB = 1_000_000


def host_main(args) -> None:
    """One host: for each run, a fresh manager (session, cache); "go [PEER...]" fetches.
    No django.setup(): a fetch needs settings, not the app registry, and 16 hosts
    starting on 2 cores would spend seconds loading every app."""
    import resource

    from core.redis import get_redis
    from inference_protocol.heartbeat import HEARTBEAT_INTERVAL_S, node_key, publish
    from inference_worker.checkpoints import CheckpointManager
    from inference_worker.identity import WORKER_ID

    print(json.dumps({"event": "up"}), flush=True)
    for line in sys.stdin:
        run = json.loads(line)
        manager = CheckpointManager(cache_dir=run["cache"], web_seed=run["web_seed"],
                                    discovery=run["discovery"])
        beating = threading.Event()
        if run["discovery"]:  # the node record, as the worker's heartbeat publishes it
            threading.Thread(target=_beat, args=(manager, beating, publish, HEARTBEAT_INTERVAL_S),
                             daemon=True).start()
        manager.store.check()  # a first S3 call sets up much of boto3: not part of any fetch's time
        print(json.dumps({"event": "ready", "listen": manager.address}), flush=True)
        words = sys.stdin.readline().split()
        for peer in words[1:]:
            host, _, port = peer.rpartition(":")
            manager.static_peers.append((host, int(port)))
        cpu = time.process_time()
        manager.ensure(model=run["model"], version=run["version"])
        fetch = manager.fetches[f"{run['model']}@{run['version']}"]
        print(json.dumps({"event": "present", "at": time.time(), **fetch.stats()}), flush=True)
        sys.stdin.readline()  # "stop": seed until then
        stats = fetch.stats()
        beating.set()
        if run["discovery"]:
            get_redis().delete(node_key(WORKER_ID))
        manager.close()
        print(json.dumps({"event": "stopped", "cpu_s": time.process_time() - cpu,
                          "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                          **stats}), flush=True)


def _beat(manager, stopped: threading.Event, publish, interval: float) -> None:
    while not stopped.wait(interval):
        publish([], manager.node_record())


class BenchHost:
    def __init__(self, index: int, env: dict):
        self.index = index
        self.stderr = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([sys.executable, __file__, "host"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1)
        self.events: dict[str, dict] = {}
        self.changed = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                self.events[event["event"]] = event
                self.changed.set()
        self.events.setdefault("exited", {})
        self.changed.set()

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def start(self, **run) -> None:
        for kind in ("ready", "present", "stopped"):
            self.events.pop(kind, None)
        self.send(json.dumps(run))

    def wait(self, kind: str, deadline: float) -> dict:
        while kind not in self.events:
            if "exited" in self.events:
                self.stderr.seek(0)
                raise RuntimeError(f"host {self.index} exited before {kind}:\n{self.stderr.read()[-3000:]}")
            if not self.changed.wait(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"host {self.index}: no {kind} in time")
            self.changed.clear()
        return self.events[kind]

    def close(self) -> None:
        """End of its input: the host exits (wait() for it)."""
        if self.proc.poll() is None:
            self.proc.stdin.close()

    def wait_closed(self) -> None:
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_hosts(k: int, *, origin, redis_url: str, rate: int) -> list[BenchHost]:
    from tests.inference_worker.checkpoints.hosts import host_env

    env = host_env(origin=origin.url, redis_url=redis_url, rate=rate, LOG_LEVEL="WARNING")
    hosts = [BenchHost(i, env) for i in range(k)]
    deadline = time.monotonic() + 60 + 5 * k
    for h in hosts:
        h.wait("up", deadline)
    return hosts


def run_strategy(name: str, hosts: list[BenchHost], *, model: str, version: str, size: int, rate: int,
                 origin) -> dict:
    k = len(hosts)
    bound = size / rate if rate else 1.0  # rate 0: uncapped (the memory run)
    swarm = name == "swarm"
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as workdir:
        for h in hosts:
            h.start(model=model, version=version, cache=f"{workdir}/host{h.index}",
                    web_seed=name != "tree" or h.index == 0, discovery=swarm)
        deadline = time.monotonic() + 60 + 5 * k
        for h in hosts:
            h.wait("ready", deadline)
        origin.bytes_served = 0
        load = os.getloadavg()[0]
        start = time.time()
        deadline = time.monotonic() + 60 + 4 * k * bound
        if name == "tree":
            _tree(hosts, deadline)
        else:
            for h in hosts:
                h.send("go")
        times = sorted(h.wait("present", deadline)["at"] - start for h in hosts)
        origin_copies = origin.bytes_served / size
        for h in hosts:
            h.send("stop")
        stopped = [h.wait("stopped", time.monotonic() + 30) for h in hosts]
    p50, p99 = statistics.median(times), times[min(k - 1, int(0.99 * k))]
    return {"name": name, "hosts": k, "all": times[-1], "p50": p50 / bound, "p99": p99 / bound,
            "worst": times[-1] / bound, "bound": bound, "origin_copies": origin_copies,
            "rss": [e["peak_rss_mb"] for e in stopped], "cpu_s": sum(e["cpu_s"] for e in stopped),
            "load": (load, os.getloadavg()[0])}


def outages(host: BenchHost, *, model: str, version: str, size: int, origin, down_s: float,
            count: int) -> list[float]:
    """One host fetching from the origin alone, which goes down ``count`` times for
    ``down_s`` (cutting the transfer, then answering 503): for each return, the seconds
    until the web seed's bytes flow again."""
    delays = []
    with tempfile.TemporaryDirectory(prefix="bench-outage-") as workdir:
        host.start(model=model, version=version, cache=f"{workdir}/host", web_seed=True, discovery=False)
        host.wait("ready", time.monotonic() + 60)
        origin.bytes_served = 0
        host.send("go")
        for i in range(count):
            while origin.bytes_served < (i + 1) * size / (count + 2):  # a share of the file between outages
                if "present" in host.events or "exited" in host.events:
                    raise RuntimeError("the fetch ended before the outages did: use a larger --size-mb")
                time.sleep(0.05)
            origin.outage()
            time.sleep(down_s)
            origin.restore()
            if not origin.resumed.wait(120):
                raise TimeoutError("the web seed did not come back within 120 s")
            delays.append(origin.resumed_at - origin.restored_at)
        host.wait("present", time.monotonic() + 120 + 4 * size / MB)
        host.send("stop")
        host.wait("stopped", time.monotonic() + 30)
    return delays


def _tree(hosts: list[BenchHost], deadline: float) -> None:
    """Host i serves hosts 2i+1 and 2i+2 once it holds a verified copy."""
    hosts[0].send("go")
    started = {0}
    while len(started) < len(hosts):
        for i in sorted(started):
            if "present" in hosts[i].events:
                for child in (2 * i + 1, 2 * i + 2):
                    if child < len(hosts) and child not in started:
                        hosts[child].send(f"go {hosts[i].events['ready']['listen']}")
                        started.add(child)
        if time.monotonic() > deadline:
            raise TimeoutError("tree did not reach every host in time")
        time.sleep(0.05)


def publish(path: Path, size: int, model: str) -> None:
    from inference_client.checkpoints.services import model_version_publish

    with path.open("wb") as fh:
        for _ in range(0, size, 1 << 20):
            fh.write(os.urandom(min(1 << 20, size - fh.tell())))
    model_version_publish(model=model, version="v1", paths=[path], created_by="bench")


def report(r: dict, size: int, rate: int) -> str:
    rss = ", ".join(f"{m:.0f}" for m in r["rss"])
    return (f"{r['name']}: {r['hosts']} hosts, {size / MB:.0f} MB, {rate / MB:.0f} MB/s links: "
            f"all verified in {r['all']:.1f} s; p50 {r['p50']:.2f}x p99 {r['p99']:.2f}x the bound "
            f"({r['bound']:.1f} s), every host <= {r['worst']:.2f}x; "
            f"origin sent {r['origin_copies']:.2f} copies; "
            f"hosts' CPU {r['cpu_s']:.1f} s in all; load average {r['load'][0]:.1f} -> {r['load'][1]:.1f}; "
            f"peak RSS per host (MB): {rss}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="role")
    sub.add_parser("host")
    parser.add_argument("--hosts", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--size-mb", type=float, default=48)
    parser.add_argument("--rate-mb", type=float, default=4)
    parser.add_argument("--strategies", default="naive,tree,swarm")
    parser.add_argument("--quick", action="store_true", help="K = 8, 8 MB, 8 MB/s (under a minute)")
    parser.add_argument("--memory", action="store_true", help="1 GB on two uncapped hosts: peak RSS")
    parser.add_argument("--outage", type=float, metavar="SECONDS",
                        help="one host; the origin down this long, 3 times: time until the web seed resumes")
    args = parser.parse_args()
    if args.role == "host":
        return host_main(args)

    import django
    from django.conf import settings

    django.setup()
    from django.db import connection

    from core.blobstore import get_blob_store
    from tests.inference_worker.checkpoints.origin import Origin

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql") or not settings.REDIS_URL or not settings.S3_BUCKET:
        sys.exit("bench/distribution.py needs DATABASE_URL (PostgreSQL), REDIS_URL and S3_* "
                 "(see scripts/test.sh)")
    db.setdefault("TEST", {})["NAME"] = f"{db['NAME']}_bench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=True)
    store = get_blob_store()
    store.ensure_bucket()
    model = f"bench{int(time.time())}"
    size = int((1000 if args.memory else 8 if args.quick else args.size_mb) * MB)
    rate = 0 if args.memory else int((8 if args.quick else args.rate_mb) * MB)
    ks = [1] if args.outage else [2] if args.memory else ([8] if args.quick else args.hosts)
    strategies = ["swarm"] if args.memory else args.strategies.split(",")
    began = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
            t = time.monotonic()
            publish(Path(tmp) / "model.bin", size, model)
            print(f"published {model}@v1: {size / MB:.0f} MB in {time.monotonic() - t:.1f} s "
                  f"(store: {store.describe()})", flush=True)
        with Origin(settings.S3_ENDPOINT_URL, rate=rate) as origin:
            hosts = start_hosts(max(ks), origin=origin, redis_url=settings.REDIS_URL, rate=rate)
            try:
                if args.outage:
                    delays = outages(hosts[0], model=model, version="v1", size=size, origin=origin,
                                     down_s=args.outage, count=3)
                    print(f"outage: origin down {args.outage:.0f} s, 3 times, {rate / MB:.0f} MB/s link: "
                          f"the web seed resumed {', '.join(f'{d:.2f}' for d in delays)} s after it "
                          f"returned (goal <= 2; {origin.refused} requests answered 503 meanwhile)")
                    ks = []
                for k in ks:
                    for name in strategies:
                        result = run_strategy(name, hosts[:k], model=model, version="v1", size=size,
                                              rate=rate, origin=origin)
                        if args.memory:
                            print(f"memory: {size / MB:.0f} MB checkpoint, {k} uncapped hosts: "
                                  f"all verified in {result['all']:.1f} s; peak RSS per host (MB): "
                                  + ", ".join(f"{m:.0f}" for m in result["rss"]) + " (goal <= 200)")
                        else:
                            print(report(result, size, rate), flush=True)
            finally:
                for h in hosts:
                    h.close()
                for h in hosts:
                    h.wait_closed()
        print(f"bench took {time.monotonic() - began:.0f} s")
    finally:
        from inference_client.models import ModelVersion
        from inference_protocol.checkpoints import Manifest

        for row in ModelVersion.objects.filter(model=model):
            for f in Manifest.from_dict(row.manifest).files:
                store.delete(f.object_key)
        connection.creation.destroy_test_db(db["NAME"].removesuffix("_bench"), verbosity=0, keepdb=True)


if __name__ == "__main__":
    main()
