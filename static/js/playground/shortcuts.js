// The keyboard shortcuts list (templates/playground/_shortcuts.html), a popover opened
// by its button or "?". The shortcuts themselves (Ctrl+Enter run, Ctrl+S save, Ctrl+M
// add a message) are playground.js's keys.

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
  }
});
