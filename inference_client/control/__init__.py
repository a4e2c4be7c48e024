"""The control plane (issue #16): config documents (documents.py) and canary
rollouts of model versions (rollout.py)."""
