from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "evals"

    def ready(self):
        from django.db.models.signals import post_save

        from playground import move_checks

        from . import (
            evaluator_tools,  # noqa: F401 (registers the tool_calls evaluator)
            permissions,  # noqa: F401 (registers datasets as a kind of shared object)
        )
        from .gate import gate_check
        from .pins import on_version_saved

        move_checks.register(gate_check)
        post_save.connect(on_version_saved, sender="playground.PromptVersion",
                          dispatch_uid="evals.pins.on_version_saved")
