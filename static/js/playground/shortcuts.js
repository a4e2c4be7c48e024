// The keyboard shortcuts list (templates/playground/_shortcuts.html), a popover opened
// by its button or "?". Ctrl+Enter (run) and Ctrl+S (save) are playground.js's keys;
// Alt+Enter presses "Add message" (#add-message) where the page has one.

const $ = (id) => document.getElementById(id);
const pop = $("shortcuts-pop");

// Only the shortcuts whose control this page (and this role) has, as it is when opened.
pop.addEventListener("beforetoggle", (e) => {
  if (e.newState !== "open") return;
  for (const row of pop.querySelectorAll("[data-needs]")) row.hidden = !$(row.dataset.needs);
});

function typing(target) {
  return target.closest("input, textarea, select, [contenteditable=true]") !== null;
}

document.addEventListener("keydown", (e) => {
  if (e.key === "?" && !e.ctrlKey && !e.metaKey && !e.altKey && !typing(e.target)) {
    e.preventDefault();
    pop.togglePopover();
  } else if (e.key === "Enter" && e.altKey && !e.ctrlKey && !e.metaKey && $("add-message")) {
    e.preventDefault();
    $("add-message").click();
  }
});
