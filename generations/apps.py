from django.apps import AppConfig


class GenerationsConfig(AppConfig):
    name = "generations"
