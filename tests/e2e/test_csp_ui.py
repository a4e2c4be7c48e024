"""The Content-Security-Policy in Chromium (core/csp.py): the main pages, each
used a little, raise no `securitypolicyviolation` event and log no console error,
and /api/docs renders Swagger UI with no request to another origin."""

import pytest
from playwright.sync_api import expect

from tests.e2e.test_evals_ui import call
from tests.e2e.test_playground_ui import sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]

RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
"""


INJECT = """() => {
  const script = document.createElement("script");
  script.textContent = "window.__injected = true";
  document.head.append(script);
  document.body.setAttribute("style", "background: red");
  return [window.__injected === true, getComputedStyle(document.body).backgroundColor];
}"""


def _visit(page, url: str) -> list[str]:
    response = page.goto(url)
    assert "content-security-policy" in response.headers, url
    page.wait_for_load_state("networkidle")
    return page.evaluate("window.__csp")


def test_the_main_pages_raise_no_policy_violation(live_url, new_page, console_errors):
    page = new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    foreign = []
    page.on("request", lambda r: None if r.url.startswith((live_url, "data:")) else foreign.append(r.url))
    sign_up(page, live_url)
    prompt = call(page, "POST", "/api/prompts/", {"title": "CSP"})["body"]
    call(page, "POST", f"/api/prompts/{prompt['id']}/versions",
         {"body": "Hello {{name}}", "model": "fixed-cost", "message": "first"})
    violations = {}
    for path in ("/", "/prompts/", f"/prompts/{prompt['id']}/", f"/prompts/{prompt['id']}/history/",
                 "/evals/", "/chat/", "/settings/api-keys/", "/settings/webhooks/", "/prompts/shared/"):
        violations[path] = _visit(page, live_url + path)
    # The playground used: a run streams its answer (connect-src) and renders it.
    page.goto(f"{live_url}/prompts/{prompt['id']}/")
    page.fill("#body-input", "Say hi")
    page.select_option("#model-select", "fixed-cost")
    page.click("#run-btn")
    expect(page.locator("#output")).to_have_text("ih yaS", timeout=15_000)
    violations["run"] = page.evaluate("window.__csp")
    assert {p: v for p, v in violations.items() if v} == {}
    assert console_errors == []
    assert foreign == []
    # And the policy is enforced: an injected inline script and style="" do nothing.
    ran, background = page.evaluate(INJECT)
    assert not ran and background != "rgb(255, 0, 0)"
    assert len(page.evaluate("window.__csp")) == 2


def test_the_api_docs_render_swagger_ui_from_our_own_files(live_url, new_page, console_errors):
    page = new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    assert _visit(page, f"{live_url}/api/docs/") == []
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Promptyard API")
    expect(page.locator(".opblock").first).to_be_visible()
    page.locator(".opblock-summary").first.click()  # an operation opens (its React parts render)
    assert page.evaluate("window.__csp") == []
    assert [u for u in requests if not u.startswith((live_url, "data:"))] == []
    assert console_errors == []
