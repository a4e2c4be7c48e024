import factory
from django.contrib.auth import get_user_model

from accounts import services as account_services
from accounts.models import Tier

PASSWORD = "correct-horse-battery-staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class ApiKeyFactory:
    """API keys go through the real service so the raw key is known to the test."""

    @staticmethod
    def create_with_raw(*, user, tier: str = Tier.FREE, name: str = "test"):
        return account_services.api_key_create(user=user, name=name, tier=tier)
