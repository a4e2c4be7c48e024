from django.contrib import admin

from .models import Account, ApiKey, Membership, Team
from .services import account_tier_set

admin.site.register(Team)
admin.site.register(Membership)


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    """Where staff set an account's tier; its keys follow (account_tier_set)."""

    list_display = ["user", "tier", "updated_at"]
    list_filter = ["tier"]
    search_fields = ["user__username", "user__email"]
    autocomplete_fields = ["user"]

    def save_model(self, request, obj, form, change):
        account_tier_set(user=obj.user, tier=obj.tier)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "tier", "prefix", "last_used_at", "revoked_at"]
    # A key's tier is its account's: change it on the account.
    readonly_fields = ["key_hash", "prefix", "tier"]
