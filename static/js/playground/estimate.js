// An estimate (POST /api/estimate, /api/evals/estimate) in one sentence.

export function describeEstimate(e) {
  const n = e.items.reduce((a, i) => a + i.count, 0);
  const cost = e.cost_usd === null ? "cost not priced" : `at most $${e.cost_usd.toFixed(4)}`;
  const time = e.seconds === null ? "no live worker to time it on"
    : `about ${e.seconds < 1 ? "<1" : Math.round(e.seconds)} s at the pool's current rate`;
  return `${n} run${n === 1 ? "" : "s"}: ${cost}, ${time}.`;
}
