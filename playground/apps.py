from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    name = "playground"

    def ready(self):
        from . import shares  # noqa: F401 (registers prompts as a kind of shared object)
