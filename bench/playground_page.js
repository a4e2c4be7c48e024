// Injected by bench/playground_page.py before the page's own scripts: the runs table's
// first paint; per run, the first content chunk at fetch level (a tee: the page reads
// the other branch) and the first paint of the run pane's output; frame times.
window.__b = { runsPaint: null, chunks: [], frames: [], loaf: [] };
const afterPaint = (f) => requestAnimationFrame(() => { const c = new MessageChannel();
  c.port1.onmessage = () => f(performance.now()); c.port2.postMessage(0); });
new MutationObserver((_, obs) => {
  if (document.querySelector('#runs-body tr')) {
    obs.disconnect();
    afterPaint((t) => { __b.runsPaint = t; });
  }
}).observe(document, { childList: true, subtree: true });
const realFetch = window.fetch;
window.fetch = async (...args) => {
  if (!String(args[0]).endsWith('/run')) return realFetch(...args);
  const entry = { start: performance.now(), firstChunk: null, shown: null, painted: null };
  __b.chunks.push(entry);
  const out = document.getElementById('output');  // the run pane's output (its text node is new per run)
  new MutationObserver((_, obs) => {
    if (out.textContent) { obs.disconnect(); afterPaint((t) => { entry.painted = t; }); }
  }).observe(out, { characterData: true, childList: true, subtree: true });
  const res = await realFetch(...args);
  entry.headers = performance.now();
  const [mine, page] = res.body.tee();
  (async () => { const r = mine.getReader(), d = new TextDecoder(); let text = '';
    for (;;) { const { value, done } = await r.read(); if (done) break;
      if (entry.firstChunk === null) { text += d.decode(value);
        if (/"content":\s*"[^"]/.test(text)) entry.firstChunk = performance.now(); } } })();
  return new Response(page, { status: res.status, statusText: res.statusText, headers: res.headers });
};
window.__frames = () => { __b.frames = []; let last = performance.now(); __b.stop = false;
  const tick = (t) => { __b.frames.push(t - last); last = t; if (!__b.stop) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  new PerformanceObserver((l) => { for (const e of l.getEntries()) __b.loaf.push(e.duration); })
    .observe({ type: 'long-animation-frame' }); };
