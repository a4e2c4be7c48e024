// Large bodies: read lazily in Range chunks (metadata first, never one giant
// request), and upload straight to the object store with a presigned PUT.

import { ApiError, api, errorFrom } from "./api.js";

const CHUNK_BYTES = 512 * 1024;

// The body text of a version: inline in the metadata when small, else fetched.
export async function loadBody(version, { lazyBytes, onProgress = () => {} }) {
  if (version.body !== null && version.body !== undefined) return version.body;
  if (version.body_size <= lazyBytes) {
    const res = await fetch(version.body_url, { credentials: "same-origin" });
    if (!res.ok) throw await errorFrom(res);
    return res.text();
  }
  // Sequential Range requests with a streaming decoder (a chunk may end in
  // the middle of a UTF-8 character); each await lets the tab stay responsive.
  const decoder = new TextDecoder();
  const parts = [];
  for (let start = 0; start < version.body_size; start += CHUNK_BYTES) {
    const end = Math.min(start + CHUNK_BYTES, version.body_size) - 1;
    const res = await fetch(version.body_url, {
      credentials: "same-origin", headers: { Range: `bytes=${start}-${end}` },
    });
    if (res.status !== 206 && !res.ok) throw await errorFrom(res);
    parts.push(decoder.decode(new Uint8Array(await res.arrayBuffer()), { stream: true }));
    onProgress((end + 1) / version.body_size);
  }
  parts.push(decoder.decode());
  return parts.join("");
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// Browsers set these themselves and refuse scripts that try.
const FORBIDDEN = new Set(["content-length", "host", "connection"]);

function put(url, target, bytes, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(target.method || "PUT", url);
    for (const [k, v] of Object.entries(target.headers || {})) {
      if (!FORBIDDEN.has(k.toLowerCase())) xhr.setRequestHeader(k, v);
    }
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onload = () => (xhr.status < 300 ? resolve() : reject(new ApiError(xhr.status, safeJson(xhr.responseText))));
    xhr.onerror = () => reject(new ApiError(0, { error: { message: "The upload to the object store failed. Try saving again." } }));
    xhr.send(bytes);
  });
}

function safeJson(text) {
  try { return JSON.parse(text); } catch { return null; }
}

// Presign, PUT with progress, and return the body_upload reference for the version.
export async function uploadBody(apiBase, text, onProgress) {
  const bytes = new TextEncoder().encode(text);
  const sha256 = await sha256Hex(bytes);
  const target = await api(`${apiBase}/uploads`, { method: "POST", body: { size: bytes.length } });
  await put(target.url, target, bytes, onProgress);
  return { upload: target.upload, sha256 };
}
