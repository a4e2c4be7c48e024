from django.apps import AppConfig


class InferenceWorkerConfig(AppConfig):
    name = "inference_worker"
