"""Sharing of any kind of object (sharing.kinds: prompts, datasets): links, grants
to accounts and teams, the audit log, and who may do what (sharing.access, the
only place that decides it). Transfer offers are stored here; a prompt's transfer
and forks are playground.ownership's."""
