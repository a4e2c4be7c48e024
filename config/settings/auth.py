"""Login and signup throttling (accounts/throttling.py), per client address as
TRUSTED_PROXIES gives it (core/clientip.py).

Every value can be set by an environment variable of the same name.
"""

from datetime import timedelta

from core.env import env_int, env_str

# Failed logins allowed per (username, address) and per address before logins
# from there are refused for LOGIN_LOCKOUT_S (429 with Retry-After).
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_LOCKOUT_S = env_int("LOGIN_LOCKOUT_S", 900)
# New accounts (signup attempts) allowed per address per window; each account
# brings a free quota of its own.
SIGNUP_LIMIT = env_int("SIGNUP_LIMIT", 10)
SIGNUP_WINDOW_S = env_int("SIGNUP_WINDOW_S", 3600)

# django-axes does the login counting for every authenticate(): the login page and the
# admin's (its app, middleware and backend are in base.py).
# Counted in Redis when there is one (shared by every process, no database
# write per failure); otherwise in the database (the cache is then per process).
AXES_HANDLER = ("axes.handlers.cache.AxesCacheHandler" if env_str("REDIS_URL")
                else "axes.handlers.database.AxesDatabaseHandler")
AXES_DISABLE_ACCESS_LOG = True
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=LOGIN_LOCKOUT_S)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_CLIENT_IP_CALLABLE = "core.clientip.request_client_ip"
AXES_LOCKOUT_CALLABLE = "accounts.throttling.lockout_response"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
