"""manage.py config_publish [--file DOC.json] [--set PATH=VALUE ...] --reason TEXT
manage.py config_publish --rollback      (N-1's content as N+1)
manage.py config_publish --show          (the newest document and its diff against its parent)

--file gives the whole content; --set changes the newest document's content (or
--file's) at dotted paths, the value as JSON: --set rate_limits.free.requests_per_min=5.
An invalid document is refused with every problem named, and nothing is signed.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from core.commands import operator
from inference_client.control import documents
from inference_protocol.config_document import ConfigError


class Command(BaseCommand):
    help = "Publish a signed config document (or roll back to N-1's content, or show the newest)."

    def add_arguments(self, parser):
        parser.add_argument("--file", help="JSON file with the whole content")
        parser.add_argument("--set", action="append", default=[], dest="assignments", metavar="PATH=VALUE")
        parser.add_argument("--reason", default="")
        parser.add_argument("--rollback", action="store_true")
        parser.add_argument("--show", action="store_true")
        parser.add_argument("--rebroadcast", action="store_true",
                            help="send the newest document to every node again")
        parser.add_argument("--created-by", default=operator())

    def handle(self, *args, file, assignments, reason, rollback, show, rebroadcast, created_by, **options):
        if show:
            latest = documents.latest_document()
            number = latest.number if latest else 0
            content = documents.document_content(number)
            parent = documents.document_content(latest.parent or 0) if latest else content
            self.stdout.write(json.dumps({"number": number, "parent": latest.parent if latest else None,
                                          "content": content,
                                          "diff": documents.content_diff(parent, content)}, indent=2))
            return
        if rebroadcast:
            documents.config_rebroadcast()
            self.stdout.write("rebroadcast the newest document")
            return
        try:
            if rollback:
                record = documents.config_rollback(actor=created_by, reason=reason)
            else:
                if not file and not assignments:
                    raise CommandError("give --file, --set, --rollback or --show")
                base = documents.current_content()
                if file:
                    with open(file) as fh:
                        base = json.load(fh)
                content = documents.content_with(base, assignments)
                record = documents.config_publish(content=content, actor=created_by, reason=reason)
        except ConfigError as exc:
            raise CommandError("document refused:\n  " + "\n  ".join(exc.problems)) from None
        except (documents.ConfigConflict, OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"published config document {record.number} (parent {record.parent}, "
                          f"sha256 {record.digest[:16]})")
