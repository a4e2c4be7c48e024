"""Browser pages of the gateway: API keys with their usage and live limits."""

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone

from accounts.selectors import account_tier, api_key_list
from inference_client.selectors import key_rate_limits, usage_by_key, usage_summary
from inference_protocol import config


@login_required
def api_keys(request):
    """Keys with their usage over the last 24 h and what is left of their
    per-minute rate limits right now (read from the live buckets)."""
    since = timezone.now() - timedelta(hours=24)
    keys = list(api_key_list(user=request.user))
    usage = usage_by_key(user=request.user, since=since)
    limits = key_rate_limits(keys=[k for k in keys if k.is_active])
    for key in keys:
        key.usage_24h = usage.get(key.pk, {"requests": 0, "tokens": 0})
        key.limits_now = limits.get(key.pk) if limits is not None else None
    tiers = [{"name": name, **values} for name, values in config.current().rate_limits.items()]
    return render(request, "accounts/api_keys.html", {
        "keys": keys,
        "summary": usage_summary(user=request.user, since=since),
        "tiers": tiers,
        "account_tier": account_tier(user=request.user),
        "limits_enforced": limits is not None,
        "config": {"tiers": {t["name"]: t for t in tiers}, "limitsEnforced": limits is not None},
    })
