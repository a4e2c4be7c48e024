// Response format and tools: as the editor holds them (text), as a saved
// version holds them, and as a run request sends them.

const $ = (id) => document.getElementById(id);

export function parseJsonField(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${err.message}`);
  }
}

// The editor's fields as typed (a draft keeps what does not parse yet).
export function readFormat() {
  return { response_format: $("response-format").value, response_schema: $("response-schema").value,
           tools: $("tools-input").value, tool_choice: $("tool-choice").value };
}

export function showFormat(s) {
  $("response-format").value = s.response_format || "text";
  $("response-schema").value = s.response_schema || "";
  $("tools-input").value = s.tools || "";
  $("tool-choice").value = s.tool_choice || "auto";
  $("schema-row").hidden = $("response-format").value !== "json_schema";
}

// A saved version's tools, as the editor shows them ("" for none).
export function toolsText(tools) {
  return tools && tools.length ? JSON.stringify(tools, null, 2) : "";
}

// A saved version keeps a response schema (a JSON object mode is the schema {"type": "object"}).
export function formatOfVersion(v) {
  return { ...(v.response_schema ? { response_format: "json_schema",
                                     response_schema: JSON.stringify(v.response_schema, null, 2) }
    : { response_format: "text", response_schema: "" }), tools: toolsText(v.tools),
           tool_choice: typeof v.tool_choice === "string" ? v.tool_choice : "auto" };
}

// The schema to save with a version (null: plain text); throws when it does not parse.
export function schemaToSave(s) {
  if (s.response_format === "json_object") return { type: "object" };
  if (s.response_format !== "json_schema") return null;
  return parseJsonField(s.response_schema, "The response schema");
}

export function toolsToSave(s) {
  return (s.tools || "").trim() ? parseJsonField(s.tools, "Tools") : [];
}

// A saved version's tool_choice: null is auto (and the only choice without tools).
export function toolChoiceToSave(s) {
  return (s.tools || "").trim() && s.tool_choice && s.tool_choice !== "auto" ? s.tool_choice : null;
}

// The request's response_format / tools / tool_choice; throws when a field does not parse.
export function formatRequest(s) {
  const out = {};
  if (s.response_format === "json_object") out.response_format = { type: "json_object" };
  if (s.response_format === "json_schema") {
    out.response_format = { type: "json_schema", json_schema: { name: "response", strict: true,
      schema: parseJsonField(s.response_schema, "The response schema") } };
  }
  if ((s.tools || "").trim()) {
    out.tools = parseJsonField(s.tools, "Tools");
    out.tool_choice = s.tool_choice || "auto";
  }
  return out;
}

// A version's turns as the editor holds them.
export function rawTurns(messages) {
  return (messages || []).map((m) => ({ role: m.role, content: m.content || "",
    calls: m.tool_calls ? JSON.stringify(m.tool_calls, null, 2) : "", callId: m.tool_call_id || "" }));
}
