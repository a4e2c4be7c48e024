"""manage.py swarm_credential --host NAME --out DIR: a worker's swarm credential.

Run on the control plane (it needs CONFIG_SIGNING_KEY). Writes DIR/swarm-cert.pem
and DIR/swarm-key.pem (mode 0600); give them to the worker as SWARM_CERT_FILE and
SWARM_KEY_FILE. A peer without such a credential gets no piece of any checkpoint
(inference_protocol.swarm_credentials).
"""

import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference_protocol.swarm_credentials import issue_credential


class Command(BaseCommand):
    help = "Issue a worker's swarm credential (certificate and key), signed by the swarm CA."

    def add_arguments(self, parser):
        parser.add_argument("--host", required=True, help="the worker's name, in the certificate")
        parser.add_argument("--out", required=True, type=Path, help="directory to write the two files to")
        parser.add_argument("--days", type=int, default=None,
                            help="validity (default SWARM_CREDENTIAL_DAYS)")

    def handle(self, *args, host, out, days, **options):
        if not settings.CONFIG_SIGNING_KEY:
            raise CommandError("this process has no CONFIG_SIGNING_KEY: only the control plane issues "
                               "swarm credentials")
        days = days or settings.SWARM_CREDENTIAL_DAYS
        credential = issue_credential(settings.CONFIG_SIGNING_KEY, host, days=days)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in (("swarm-cert.pem", credential.cert_pem), ("swarm-key.pem", credential.key_pem)):
            fd = os.open(out / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
        self.stdout.write(f"SWARM_CERT_FILE={out / 'swarm-cert.pem'}\n"
                          f"SWARM_KEY_FILE={out / 'swarm-key.pem'}\nvalid {days} days, for host {host}")
