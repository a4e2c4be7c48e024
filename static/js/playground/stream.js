// Streams one chat completion from /v1/chat/completions (OpenAI SSE format)
// with fetch + ReadableStream, calling onToken per content chunk.

import { ApiError, errorFrom, headers } from "./api.js";

// Runs use the page's session (and its CSRF token, sent by headers()). `url`: the
// prompt's run route (the server builds the request and keeps the run in its
// history; stats.runId names it); /v1/chat/completions by default.
export async function streamChat({ request, signal, onToken, url = null }) {
  const extra = { "Content-Type": "application/json", "Accept": "text/event-stream" };
  const started = performance.now();
  let res;
  try {
    res = await fetch(url || "/v1/chat/completions", {
      method: "POST", credentials: "same-origin", signal, headers: headers(extra),
      body: JSON.stringify(url ? { ...request, stream: true }
        : { ...request, stream: true, stream_options: { include_usage: true } }),
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, { error: { message: "Could not reach the server. Check your connection and run again." } });
  }
  if (!res.ok) throw await errorFrom(res);

  const stats = { ttftMs: null, tokens: 0, finish: null, usage: null, totalMs: 0, toolCalls: [],
                  runId: res.headers.get("x-playground-run") };
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    // SSE events end with a blank line; keep a partial event for the next read.
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") { stats.totalMs = performance.now() - started; return stats; }
        const chunk = JSON.parse(data);
        if (chunk.error) throw new ApiError(502, chunk);
        if (chunk.usage) stats.usage = chunk.usage;
        const choice = chunk.choices && chunk.choices[0];
        if (!choice) continue;
        if (choice.finish_reason) stats.finish = choice.finish_reason;
        // OpenAI's streamed calls: by index, the name once, the arguments in pieces.
        for (const part of (choice.delta && choice.delta.tool_calls) || []) {
          const call = stats.toolCalls[part.index] ||= { id: "", type: "function", function: { name: "", arguments: "" } };
          if (part.id) call.id = part.id;
          if (part.function && part.function.name) call.function.name += part.function.name;
          if (part.function && part.function.arguments) call.function.arguments += part.function.arguments;
        }
        const text = choice.delta && choice.delta.content;
        if (text) {
          if (stats.ttftMs === null) stats.ttftMs = performance.now() - started;
          stats.tokens += 1;
          onToken(text, stats);
        }
      }
    }
  }
  throw new ApiError(502, { error: { message: "The stream ended before the model finished. Run again." } });
}

export function tokensPerSecond(stats) {
  const n = completionTokens(stats);
  const genMs = stats.totalMs - (stats.ttftMs || 0);
  // Tokens after the first over the time after it; when they all arrived in
  // one burst (a batch engine) that window is meaningless: use the whole run.
  if (stats.tokens > 1 && n > 1 && genMs >= 50) return ((n - 1) * 1000) / genMs;
  return n > 0 && stats.totalMs > 0 ? (n * 1000) / stats.totalMs : null;
}

export function completionTokens(stats) {
  return (stats.usage && stats.usage.completion_tokens) || stats.tokens;
}

export function describeRunError(err) {
  if (err.status === 429) return "Rate limited: " + err.message;
  if (err.status === 401) return err.message + " Open “API key for runs” and paste a key from the API keys page.";
  if (err.status === 0) return err.message;
  return `${err.message} (${err.code})`;
}
