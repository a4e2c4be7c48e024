// static/js/playground/shortcuts.js
var $ = (id) => document.getElementById(id);
var pop = $("shortcuts-pop");
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
