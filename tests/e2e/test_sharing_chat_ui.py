"""Sharing, the API keys page and chat in a real browser, against the live
uvicorn server of tests/e2e (one process: the in-memory channel layer carries
the chat between the two users' sockets)."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.e2e.test_playground_ui import create_prompt, save, sign_up

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.needs_services]


def expected_404s(errors):
    """The browser logs every 404 response as a console error; the refused link is one we want."""
    return [e for e in errors if "status of 404" not in e]


def open_share_dialog(page):
    page.click("#share-open")
    dialog = page.locator("#share-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#share-links li")).to_have_count(1)  # loaded: a link or "No links yet."
    return dialog


def test_should_share_by_link_open_it_signed_out_and_refuse_it_after_revoke(live_url, new_page,
                                                                           console_errors):
    owner = new_page()
    sign_up(owner, live_url)
    create_prompt(owner, live_url, "Shared greeter")
    owner.fill("#body-input", "Greet {{name}} warmly")
    save(owner, "first", 1)

    # A public link pinned to nothing, with a name; the token is shown once.
    open_share_dialog(owner)
    expect(owner.locator("#share-mode")).to_be_focused()
    owner.fill("#share-name", "Review")
    owner.select_option("#share-expiry", "7")
    owner.click("#share-link-create")
    url_box = owner.locator("#share-url")
    expect(url_box).to_have_value(re.compile(r"^http://127\.0\.0\.1:\d+/s/\S{20,}$"))
    link_url = url_box.input_value()
    owner.click("#share-copy")
    expect(owner.locator("#share-copy-status")).not_to_be_empty()
    active = owner.locator("#share-links li[data-state=active]")
    expect(active).to_contain_text("Review")
    expect(active).to_contain_text("anyone · all versions · expires")
    screenshot(owner, "share-dialog")

    # Signed out, in a second browser context: the prompt is readable.
    stranger = new_page()
    stranger.goto(link_url)
    expect(stranger.locator("h1")).to_have_text("Shared greeter")
    expect(stranger.locator("pre.prompt-body")).to_have_text("Greet {{name}} warmly")
    expect(stranger.get_by_role("link", name="Log in")).to_be_visible()  # really signed out
    screenshot(stranger, "share-link-page")

    # Revoke in the dialog (two clicks: it cannot be undone); the next request is refused.
    revoke = owner.locator("#share-links li[data-state=active] button")
    revoke.click()
    expect(revoke).to_have_text("Confirm revoke")
    revoke.click()
    expect(owner.locator("#share-links li[data-state=revoked]")).to_contain_text("revoked")
    stranger.reload()
    expect(stranger.locator("h1")).to_have_text("Link not found")
    expect(stranger.locator("pre.prompt-body")).to_have_count(0)

    # Escape closes the dialog and focus returns to the Share button.
    owner.keyboard.press("Escape")
    expect(owner.locator("#share-dialog")).to_be_hidden()
    expect(owner.locator("#share-open")).to_be_focused()
    assert expected_404s(console_errors) == []
    assert len(console_errors) == 1


def test_should_list_a_grant_under_shared_with_me_and_hide_the_dialog_from_viewers(live_url, new_page,
                                                                                  console_errors):
    friend = new_page(width=390, height=844)
    friend_name = sign_up(friend, live_url)
    owner = new_page()
    sign_up(owner, live_url)
    prompt_id = create_prompt(owner, live_url, "Team summary")
    owner.fill("#body-input", "Summarise {{text}}")
    save(owner, "v1", 1)

    owner.click("a:has-text('History')")
    open_share_dialog(owner)
    owner.select_option("#share-version", index=1)
    expect(owner.locator("#share-version option:checked")).to_have_text("Only v1 · v1")
    owner.fill("#share-username", "no-such-user-xyz")
    owner.click("#share-grant-create")
    expect(owner.locator("#share-error")).to_be_visible()  # the server's message, shown in the dialog
    owner.fill("#share-username", friend_name)
    owner.select_option("#share-role", "editor")
    owner.click("#share-grant-create")
    expect(owner.locator("#share-grants li[data-state=active]")).to_contain_text(f"{friend_name} · editor")
    expect(owner.locator("#share-error")).to_be_hidden()

    friend.goto(f"{live_url}/prompts/shared/")
    row = friend.locator("tbody tr", has_text="Team summary")
    expect(row).to_contain_text("editor")
    screenshot(friend, "shared-with-me-phone")
    row.get_by_role("link", name="Team summary").click()
    expect(friend).to_have_url(f"{live_url}/prompts/{prompt_id}/")
    expect(friend.locator("#body-input")).to_have_value("Summarise {{text}}")
    expect(friend.locator("#share-open")).to_have_count(0)  # owner-only
    owner.keyboard.press("Escape")
    owner.set_viewport_size({"width": 390, "height": 844})
    open_share_dialog(owner)
    screenshot(owner, "share-dialog-phone")
    # The one 404 is the refused grant to an unknown user.
    assert expected_404s(console_errors) == []


def test_should_create_a_key_show_it_once_and_revoke_it(live_url, new_page, console_errors):
    page = new_page()
    sign_up(page, live_url)
    page.click("nav >> text=API keys")
    expect(page.locator("h1")).to_have_text("API keys")
    expect(page.locator("#key-rows")).to_contain_text("No keys yet.")
    page.fill("#key-name", "ci")
    page.click("#key-create")
    raw = page.locator("#key-raw")
    expect(raw).to_have_value(re.compile(r"^py_\S{40,}$"))
    expect(raw).to_be_focused()
    row = page.locator("#key-rows tr[data-state=active]", has_text="ci")
    expect(row).to_contain_text("never")
    expect(page.locator(".tiers")).to_contain_text("Free")
    screenshot(page, "api-keys")

    # Shown once: after a reload only the prefix is on the page.
    key = raw.input_value()
    page.reload()
    assert key not in page.content()
    row = page.locator("#key-rows tr", has_text="ci")
    expect(row.locator("code")).to_have_text(key[:10] + "…")
    expect(row).to_contain_text("0 req · 0 tok")
    row.get_by_role("button", name="Revoke key ci").click()
    row.get_by_role("button", name="Revoke key ci").click()
    expect(row).to_have_attribute("data-state", "revoked")
    page.reload()
    expect(page.locator("#key-rows tr[data-state=revoked]")).to_contain_text("revoked")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "api-keys-phone")
    assert console_errors == []


def test_should_chat_both_ways_with_typing_and_read_receipts(live_url, new_page, console_errors):
    alice, bob = new_page(), new_page(width=390, height=844)
    alice_name = sign_up(alice, live_url)
    bob_name = sign_up(bob, live_url)
    for page in (alice, bob):
        page.click("nav >> text=Chat")
        expect(page.locator("#chat-status")).to_have_text("Connected")

    # A name nobody has: a clear message, nothing opened.
    alice.fill("#chat-new-to", "nobody-by-this-name")
    alice.click("#chat-new button")
    expect(alice.locator("#chat-error")).to_contain_text("No one you can message")
    # Alice starts a conversation with Bob by his username (shown on his chat page).
    expect(bob.locator("#chat-me")).to_contain_text(bob_name)
    alice.fill("#chat-new-to", bob_name)
    alice.click("#chat-new button")
    expect(alice.locator("#chat-peer")).to_have_text(bob_name)
    expect(alice.locator("#chat-body")).to_be_focused()
    alice.fill("#chat-body", "Hello Bob")
    alice.click("#chat-form button[type=submit]")
    # The first message creates the conversation; the pane then knows Bob's name.
    expect(alice.locator("#chat-peer")).to_have_text(bob_name)

    # Bob sees the conversation and opens it; Alice then sees it read.
    bob.locator("#chat-conversations button").first.click()
    expect(bob.locator("#chat-messages li", has_text="Hello Bob")).to_be_visible()
    mine = alice.locator("#chat-messages li.mine", has_text="Hello Bob")
    expect(mine.locator(".chat-receipt")).to_have_text("Read")

    # Typing reaches the other side; the reply comes back the other way.
    bob.locator("#chat-body").press_sequentially("Hi Al", delay=20)
    expect(alice.locator("#chat-typing")).to_have_text(f"{bob_name} is typing…")
    bob.locator("#chat-body").press_sequentially("ice")
    bob.keyboard.press("Enter")
    expect(alice.locator("#chat-messages li:not(.mine)", has_text="Hi Alice")).to_be_visible()
    reply = bob.locator("#chat-messages li.mine", has_text="Hi Alice")
    expect(reply.locator(".chat-receipt")).to_have_text("Read")
    expect(alice.locator("#chat-typing")).to_be_empty()  # the message ends the typing notice
    expect(alice.locator("#chat-messages li")).to_have_count(2)  # no stray greeting, no duplicate
    expect(alice.locator("#chat-conversations .chat-dot.online")).to_have_count(1)  # Bob is online
    screenshot(alice, "chat")
    screenshot(bob, "chat-phone")
    # A link with a name opens that chat (here the existing conversation).
    bob.goto(f"{live_url}/chat/?with={alice_name}")
    expect(bob.locator("#chat-peer")).to_have_text(alice_name)
    expect(bob.locator("#chat-messages li", has_text="Hello Bob")).to_be_visible()
    assert console_errors == []


# Records every Notification the page creates (the real one still runs) and lets
# the test say whether the tab is hidden (a headless tab is never hidden by itself).
NOTIFICATION_PROBE = """
window.__notes = [];
const Real = window.Notification;
window.Notification = class extends Real {
  constructor(title, options) { super(title, options); window.__notes.push({ title, body: options?.body }); }
};
Object.defineProperty(document, "hidden", { configurable: true, get: () => window.__hidden === true });
"""


def test_should_message_from_the_share_dialog_edit_delete_search_and_count_unread(live_url, new_page,
                                                                                 console_errors):
    alice, bob = new_page(), new_page(width=390, height=844)
    bob.context.grant_permissions(["notifications"], origin=live_url)
    bob.context.add_init_script(NOTIFICATION_PROBE)
    bob_name = sign_up(bob, live_url)
    alice_name = sign_up(alice, live_url)
    create_prompt(alice, live_url, "Release notes")
    open_share_dialog(alice)
    alice.fill("#share-username", bob_name)
    alice.click("#share-grant-create")
    # The share dialog starts a chat with the grantee, the draft naming the prompt.
    alice.get_by_role("link", name=f"Message {bob_name}").click()
    expect(alice.locator("#chat-peer")).to_have_text(bob_name)
    expect(alice.locator("#chat-body")).to_have_value(re.compile(r"^About “Release notes”: http.*/prompts/"))
    alice.fill("#chat-body", "Please review the relase notes")
    alice.keyboard.press("Enter")
    expect(alice.locator("#chat-messages li.mine .chat-receipt")).to_have_text("Sent")

    # On any page Bob's navigation bar counts it.
    bob.goto(f"{live_url}/prompts/")
    expect(bob.locator("#nav-chat-unread")).to_have_text("1")
    bob.click("nav >> text=Chat")
    row = bob.locator("#chat-conversations li", has_text=alice_name)
    expect(row.locator(".chat-unread")).to_have_text("1")
    expect(bob.locator("#chat-notify")).to_be_hidden()  # permission already granted
    expect(bob.locator("#chat-notify-state")).to_contain_text("Notifications are on")
    # With the tab hidden, a new message notifies; the conversation is not open: its count grows.
    bob.evaluate("window.__hidden = true")
    alice.fill("#chat-body", "Second thought")
    alice.keyboard.press("Enter")
    expect(row.locator(".chat-unread")).to_have_text("2")
    expect(bob.locator("#nav-chat-unread")).to_have_text("2")
    assert bob.evaluate("window.__notes") == [{"title": alice_name, "body": "Second thought"}]
    bob.evaluate("window.__hidden = false")
    row.locator("button").click()
    expect(row.locator(".chat-unread")).to_be_empty()
    expect(bob.locator("#nav-chat-unread")).to_be_hidden()

    # Alice fixes the typo and takes the second message back: Bob sees both live.
    mine = alice.locator("#chat-messages li.mine", has_text="relase")
    mine.get_by_role("button", name="Edit").click()
    expect(alice.locator("#chat-editing")).to_be_visible()
    alice.fill("#chat-body", "Please review the release notes")
    alice.keyboard.press("Enter")
    expect(alice.locator("#chat-editing")).to_be_hidden()
    theirs = bob.locator("#chat-messages li", has_text="release notes")
    expect(theirs).to_contain_text("(edited)")
    second = alice.locator("#chat-messages li.mine", has_text="Second thought")
    second.get_by_role("button", name="Delete").click()
    second.get_by_role("button", name="Confirm delete").click()
    expect(bob.locator("#chat-messages li.deleted")).to_have_text("Message deleted")
    expect(bob.locator("#chat-messages li")).to_have_count(2)  # the tombstone keeps its place
    # After a reload (catch-up from the server) Bob still sees the edit and the tombstone.
    bob.reload()
    bob.locator("#chat-conversations li", has_text=alice_name).locator("button").click()
    expect(bob.locator("#chat-messages li", has_text="release notes")).to_contain_text("(edited)")
    expect(bob.locator("#chat-messages li.deleted")).to_have_count(1)

    # Search finds the edited words, not the old ones and not the deleted message.
    bob.fill("#chat-search-q", "release")
    bob.click("#chat-search button")
    expect(bob.locator("#chat-search-results li")).to_have_count(1)
    expect(bob.locator("#chat-search-results li")).to_contain_text("Please review the release notes")
    bob.fill("#chat-search-q", "thought")
    bob.click("#chat-search button")
    expect(bob.locator("#chat-search-results li")).to_have_text("No messages match.")
    screenshot(bob, "chat-edit-search-phone")

    # Notifications refused: a quiet note, no error.
    alice.click("nav >> text=Chat")
    if alice.evaluate("Notification.permission") == "default":
        alice.click("#chat-notify")
        expect(alice.locator("#chat-notify-state")).not_to_be_empty()
    assert console_errors == []
