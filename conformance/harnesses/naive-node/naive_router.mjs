#!/usr/bin/env node
// A deliberately naive LLM router in plain Node.js (no npm dependencies), with its conformance
// harness: JSON lines on stdin/stdout (conformance/PROTOCOL.md).
//
//   node conformance/harnesses/naive-node/naive_router.mjs
//
// What it does wrong, on purpose (the suite must catch each):
//   - retries EVERYTHING: 400, 401, 404, invalid bodies, even its own cancellation;
//   - a fixed 500 ms backoff, no jitter, Retry-After ignored;
//   - no 30 s budget: the caller's deadline is used as a per-attempt timeout;
//   - a stream that ends, however it ends, is complete; a stream that fails is retried and spliced;
//   - the caller's traceparent is forwarded verbatim (no child span).
// It speaks only the OpenAI Chat Completions protocol; other cases are answered "unsupported".
import readline from "node:readline";

const BACKOFF_MS = 500;
const ATTEMPTS_PER_PROVIDER = 3;
let providers = [];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const reply = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

async function attempt(provider, msg, signal) {
  const headers = { "content-type": "application/json", authorization: `Bearer ${provider.credentials.api_key}` };
  if (msg.traceparent) headers.traceparent = msg.traceparent;
  const body = {
    model: provider.model,
    messages: msg.request.messages,
    max_tokens: msg.request.max_tokens,
    stream: Boolean(msg.stream),
  };
  const res = await fetch(`${provider.base_url}/v1/chat/completions`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) {
    await res.text().catch(() => "");
    throw new Error(`HTTP ${res.status}`);
  }
  if (!msg.stream) {
    const data = await res.json();
    return data.choices[0].message.content ?? "";
  }
  let text = "";
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") continue;
        try {
          text += JSON.parse(data).choices?.[0]?.delta?.content ?? "";
        } catch {
          // a broken event: skip it
        }
      }
    }
  }
  return text; // the body ended: the answer is complete (naive)
}

async function route(msg, control) {
  let text = "";
  let last = "no provider";
  for (const provider of providers) {
    for (let n = 1; n <= ATTEMPTS_PER_PROVIDER; n++) {
      control.current = new AbortController();
      const signals = [control.current.signal];
      if (msg.deadline_ms != null) signals.push(AbortSignal.timeout(msg.deadline_ms));
      try {
        text += await attempt(provider, msg, AbortSignal.any(signals));
        return { class: "success", text };
      } catch (err) {
        last = err.name === "TimeoutError" ? "timeout" : String(err.message ?? err);
        await sleep(BACKOFF_MS);
      }
    }
  }
  return { class: last === "timeout" ? "deadline" : "all_failed", error: last, text };
}

async function call(msg) {
  const started = performance.now();
  const control = { current: null };
  const work = route(msg, control);
  let outcome;
  if (msg.cancel_after_ms != null) {
    const cancelled = sleep(msg.cancel_after_ms).then(() => null);
    outcome = await Promise.race([work, cancelled]);
    if (outcome === null) {
      control.current?.abort(); // the loop above catches the abort... and retries
      outcome = { class: "cancelled" };
    }
  } else {
    outcome = await work;
  }
  return { op: "outcome", ...outcome, elapsed_ms: performance.now() - started };
}

async function handle(msg) {
  switch (msg.op) {
    case "start":
      return {
        op: "started",
        name: "naive-node",
        version: `1.0.0 (node ${process.version})`,
        capabilities: ["stream", "deadline", "cancel", "traceparent"],
      };
    case "configure":
      if (msg.providers.some((p) => p.protocol !== "openai")) {
        return { op: "unsupported", reason: "the naive router speaks only the OpenAI protocol" };
      }
      providers = msg.providers;
      return { op: "configured" };
    case "call":
      return call(msg);
    case "stop":
      return null;
    default:
      return { op: "error", error: `unknown op ${msg.op}` };
  }
}

const queue = [];
let busy = false;
async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length > 0) {
    const answer = await handle(queue.shift());
    if (answer === null) process.exit(0);
    reply(answer);
  }
  busy = false;
}
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim()) {
    queue.push(JSON.parse(line));
    pump();
  }
});
