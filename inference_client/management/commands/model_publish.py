"""manage.py model_publish --model NAME --version V PATH...

Uploads the files (multipart, content-addressed by SHA-256), builds one torrent per
file and the manifest, records the immutable ModelVersion, and writes torrents and
manifest to the object store, where workers read them. A PATH that is a directory
contributes every file under it. Publishing the same bytes again is a no-op;
other bytes under a published version are refused.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from core.commands import ModelVersionCommand, operator
from inference_client.checkpoints.services import PublishError, model_version_publish
from inference_protocol.checkpoints import manifest_key


class Command(ModelVersionCommand):
    help = "Publish a model checkpoint (files -> object store, torrents, manifest)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--piece-size", type=int, default=settings.MODEL_PIECE_SIZE,
                            help="torrent piece size in bytes (power of two >= 16 KiB); default by file size")
        parser.add_argument("--created-by", default=operator())
        parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")

    def handle(self, *args, model, model_version, piece_size, created_by, paths, **options):
        try:
            row, created = model_version_publish(
                model=model, version=model_version, paths=paths, created_by=created_by,
                piece_size=piece_size, progress=lambda message: self.stderr.write(message))
        except PublishError as exc:
            raise CommandError(f"{exc} [{exc.code}]") from None
        files = row.manifest["files"]
        if created:
            self.stdout.write(f"published {row}: {len(files)} file(s), {row.total_size} bytes; "
                              f"manifest {manifest_key(row.model, row.version)} sha256 {row.manifest_sha256}")
        else:
            self.stdout.write(f"{row} is already published with these bytes: nothing to do")
