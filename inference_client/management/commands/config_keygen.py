"""manage.py config_keygen: a fresh Ed25519 pair for config documents."""

from django.core.management.base import BaseCommand

from inference_protocol.signing import generate_keypair


class Command(BaseCommand):
    help = "Print a new CONFIG_SIGNING_KEY (control plane only) and its CONFIG_PUBLIC_KEY (every node)."

    def handle(self, *args, **options):
        private, public = generate_keypair()
        self.stdout.write(f"CONFIG_SIGNING_KEY={private}\nCONFIG_PUBLIC_KEY={public}")
