from django.apps import AppConfig


class InferenceClientConfig(AppConfig):
    name = "inference_client"
