// A secret shown once (a new API key, a new share link) with a copy button, and a
// revoke button that asks once more: the API keys page and the share dialog use them.

// Show `input`'s new value in its `panel`, selected, for the user to copy.
export function reveal(input, value, panel, status) {
  input.value = value;
  status.textContent = "";
  panel.hidden = false;
  input.focus();
  input.select();
}

// `button` copies `input`'s value; `status` says what happened (`noun` names the value).
export function copyOnClick(button, input, status, noun) {
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(input.value);
      status.textContent = "Copied to the clipboard.";
    } catch {
      // Clipboard refused (permissions, insecure origin): leave it selected to copy by hand.
      input.select();
      status.textContent = `Press Ctrl+C (⌘C) to copy the selected ${noun}.`;
    }
  });
}

// A revoke button's first click turns it into "Confirm revoke" (false); the second one
// goes ahead (true): revocation cannot be undone.
export function confirmed(btn) {
  if (btn.dataset.armed) return true;
  btn.dataset.armed = "1";
  btn.textContent = "Confirm revoke";
  btn.classList.add("danger");
  return false;
}
