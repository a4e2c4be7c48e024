from django.contrib import admin

from .models import ApiKey, Membership, Team

admin.site.register(Team)
admin.site.register(Membership)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "tier", "prefix", "last_used_at", "revoked_at"]
    readonly_fields = ["key_hash", "prefix"]
