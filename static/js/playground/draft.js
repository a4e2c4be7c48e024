// A local draft per prompt (and base version) in localStorage, so a failed
// save or a reload never loses typed text. Large bodies are not kept here:
// localStorage holds a few MB at most.

const MAX_DRAFT_CHARS = 1_500_000;

export class Draft {
  constructor(promptId) { this.key = `promptyard:draft:${promptId}`; }

  load() {
    try { return JSON.parse(localStorage.getItem(this.key) || "null"); } catch { return null; }
  }

  save(state) {
    if ((state.body || "").length + (state.system || "").length > MAX_DRAFT_CHARS) return false;
    try {
      localStorage.setItem(this.key, JSON.stringify({ ...state, savedAt: Date.now() }));
      return true;
    } catch {
      return false; // quota exceeded: the editor still holds the text
    }
  }

  clear() { localStorage.removeItem(this.key); }
}
