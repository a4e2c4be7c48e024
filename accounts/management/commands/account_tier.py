"""`manage.py account_tier USERNAME [free|paid]`: show or set an account's tier (staff only).

The account's API keys take the new tier (in every server process within 30 s)."""

from django.contrib.auth import get_user_model
from django.core.management import BaseCommand, CommandError

from accounts.models import Tier
from accounts.selectors import account_tier
from accounts.services import account_tier_set


class Command(BaseCommand):
    help = "Show or set the tier of an account; its API keys follow."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("tier", nargs="?", choices=Tier.values)

    def handle(self, *args, username, tier, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named '{username}'.")
        if tier is not None:
            account_tier_set(user=user, tier=tier)
        self.stdout.write(f"{username}: {account_tier(user=user)}")
