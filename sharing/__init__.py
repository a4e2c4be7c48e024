"""Sharing: links, grants to accounts and teams, ownership transfer, forks,
and the audit log. Who may do what is decided only in playground/permissions.py."""
