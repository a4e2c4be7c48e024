import functools

import factory
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from accounts import services as account_services
from accounts.models import Tier

PASSWORD = "correct-horse-battery-staple"


@functools.cache
def _password_hash(hashers: tuple[str, ...]) -> str:
    """PASSWORD hashed once per hasher list: hashing it for each user cost ~0.5 s
    a user (PBKDF2's iterations), minutes over the suite."""
    return make_password(PASSWORD)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.LazyFunction(lambda: _password_hash(tuple(settings.PASSWORD_HASHERS)))

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class ApiKeyFactory:
    """API keys go through the real service so the raw key is known to the test."""

    @staticmethod
    def create_with_raw(*, user, tier: str = Tier.FREE, name: str = "test"):
        if tier != Tier.FREE:  # as staff would, on the account
            account_services.account_tier_set(user=user, tier=tier)
        return account_services.api_key_create(user=user, name=name)


class PromptFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "playground.Prompt"

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"Prompt {n}")
    description = "A prompt for tests"


class PromptVersionFactory(factory.django.DjangoModelFactory):
    """Versions go through version_create, so storage (inline / diff / store)
    is chosen exactly as in production."""

    class Meta:
        model = "playground.PromptVersion"

    prompt = factory.SubFactory(PromptFactory)
    parent = None
    body = factory.Sequence(lambda n: f"Hello {{{{name}}}}, this is version {n}.\n")
    model_name = "fixed-cost"
    message = "edit"

    @classmethod
    def _create(cls, model_class, *, prompt, parent, body, **kwargs):
        from playground import services

        author = kwargs.pop("author", None) or prompt.owner
        return services.version_create(prompt=prompt, author=author,
                                       parent_id=parent.pk if parent else None, body=body, **kwargs)


class LabelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "playground.Label"

    name = factory.Sequence(lambda n: f"label-{n}")

    @classmethod
    def _create(cls, model_class, *, version, name, **kwargs):
        from playground import services

        return services.label_move(prompt=version.prompt, name=name, version_id=version.pk,
                                   expected_version_id=None, actor=version.prompt.owner)
