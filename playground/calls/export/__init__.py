"""Export a saved version as runnable code against this server's own API.

Three forms per language, the first the default:
- short: the whole request written out, the saved values inlined as one
  literal (playground.calls.export.short): what one reads at a glance and pastes;
- inline: the parameterized script; calls /v1/chat/completions with the version's frozen model,
  parameters, system text and messages; the variables are parameters with
  the saved defaults, substituted in the exported code itself;
- reference: calls the run route of a label (or of the version id), so that
  moving the label changes what the same code runs.
The openai SDK speaks only /v1, so it has no reference form.

No snippet contains a secret: each reads the key from PROMPTYARD_API_KEY.
"""

from __future__ import annotations

from django.conf import settings

from core.error_codes import DomainError
from playground.bodies import body_text
from playground.models import Label, PromptVersion

from . import javascript, python, shell, short
from .spec import ExportSpec, Reference, export_spec

LANGUAGES = {
    # lang: (title, file name, {form: generator})
    "curl": ("curl", "prompt.sh", {"short": short.curl_short, "inline": shell.curl_inline,
                                   "reference": shell.curl_reference}),
    "python-httpx": ("Python (httpx)", "prompt.py", {"short": short.httpx_short,
                                                     "inline": python.httpx_inline,
                                                     "reference": python.httpx_reference}),
    "python-openai": ("Python (openai SDK)", "prompt.py", {"short": short.openai_short,
                                                           "inline": python.openai_inline}),
    "javascript": ("JavaScript (fetch)", "prompt.mjs", {"short": short.fetch_short,
                                                        "inline": javascript.fetch_inline,
                                                        "reference": javascript.fetch_reference}),
}
PREFERRED_LABEL = "production"


def export_base_url(request) -> str:
    return (settings.PROMPT_EXPORT_BASE_URL or request.build_absolute_uri("/")).rstrip("/")


def export_reference(*, version: PromptVersion, label: str | None = None) -> Reference:
    """`label` if given (it must exist on the prompt; it may point elsewhere
    now: a reference runs whatever it points at). Otherwise a label on this
    version (production first), else the version id itself."""
    base = f"/api/prompts/{version.prompt_id}"
    if label is None:
        names = sorted(Label.objects.filter(version=version).values_list("name", flat=True),
                       key=lambda name: (name != PREFERRED_LABEL, name))
        label = names[0] if names else None
    elif not Label.objects.filter(prompt_id=version.prompt_id, name=label).exists():
        raise DomainError(f"No label {label!r} on this prompt.", code="label_not_found",
                          field="label")
    if label is not None:
        return Reference("label", label, f"{base}/labels/{label}/run")
    return Reference("version", str(version.pk), f"{base}/versions/{version.pk}/run")


def version_spec(*, version: PromptVersion, base_url: str, label: str | None = None) -> ExportSpec:
    return export_spec(version=version, body=body_text(version), base_url=base_url,
                       reference=export_reference(version=version, label=label))


def snippets_render(*, spec: ExportSpec, langs: list[str] | None = None) -> list[dict]:
    unknown = sorted(set(langs or ()) - set(LANGUAGES))
    if unknown:
        raise DomainError(f"Unknown language {unknown[0]!r}; choose from {', '.join(LANGUAGES)}.",
                          code="invalid_value", field="lang")
    out = []
    for lang, (title, filename, forms) in LANGUAGES.items():
        if langs and lang not in langs:
            continue
        for form, generate in forms.items():
            out.append({"lang": lang, "title": title, "form": form, "filename": filename,
                        "code": generate(spec)})
    return out


def version_export(*, version: PromptVersion, base_url: str, langs: list[str] | None = None,
                   label: str | None = None) -> dict:
    spec = version_spec(version=version, base_url=base_url, label=label)
    return {
        "prompt": spec.prompt_id, "version": spec.version_id, "version_number": spec.version_number,
        "base_url": spec.base_url, "model": spec.model, "params": spec.params,
        "variables": [{"name": v.name, "default": v.default, "shell": name, "python": py}
                      for v, name, py in zip(spec.variables, shell.shell_names(spec).values(),
                                             python.python_names(spec).values(), strict=True)],
        "reference": {"kind": spec.reference.kind, "name": spec.reference.name,
                      "url": spec.base_url + spec.reference.path},
        "api_key_env": "PROMPTYARD_API_KEY",
        "snippets": snippets_render(spec=spec, langs=langs),
    }
