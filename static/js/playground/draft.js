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

// The scratch playground's draft, kept on the server per user (GET/PUT
// /api/playground/draft) so it follows the user to another browser.
export class ServerDraft {
  constructor(api) { this.api = api; }

  async load() {
    try {
      const found = await this.api("/api/playground/draft");
      return Object.keys(found.state).length ? found.state : null;
    } catch {
      return null;
    }
  }

  async save(state) {
    try {
      await this.api("/api/playground/draft", { method: "PUT", body: { state: { ...state, savedAt: Date.now() } } });
      return true;
    } catch {
      return false;
    }
  }

  async clear() {
    try { await this.api("/api/playground/draft", { method: "PUT", body: { state: {} } }); } catch { /* kept */ }
  }
}
