from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "evals"

    def ready(self):
        from playground import move_checks

        from . import (
            evaluator_tools,  # noqa: F401 (registers the tool_calls evaluator)
            permissions,  # noqa: F401 (registers datasets as a kind of shared object)
        )
        from .gate import gate_check

        move_checks.register(gate_check)
