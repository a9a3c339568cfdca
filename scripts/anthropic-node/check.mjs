// A whole and a streamed message and a token count against an Affinity frontend, with the official
// Anthropic TypeScript SDK. Usage: AFFINITY_URL=http://localhost:8000 node check.mjs
import Anthropic from "@anthropic-ai/sdk";

const baseURL = process.env.AFFINITY_URL ?? "http://localhost:8000";
const model = process.env.AFFINITY_MODEL ?? "affinity-sim";
const client = new Anthropic({ baseURL, apiKey: process.env.AFFINITY_API_KEY ?? "unused", maxRetries: 0 });

const whole = await client.messages.create({
  model,
  max_tokens: 8,
  system: "You are terse.",
  messages: [{ role: "user", content: "Hello from the Anthropic SDK" }],
});
if (whole.type !== "message" || whole.stop_reason !== "max_tokens" || whole.usage.output_tokens !== 8) {
  throw new Error(`expected a message of 8 tokens ending at max_tokens, got ${JSON.stringify(whole)}`);
}
const text = whole.content.filter((b) => b.type === "text").map((b) => b.text).join("");
console.log(`non-streaming: ${JSON.stringify(text)} (${whole.usage.output_tokens} tokens, usage ${JSON.stringify(whole.usage)})`);

const stream = client.messages.stream({
  model,
  max_tokens: 8,
  messages: [{ role: "user", content: "And now streamed" }],
});
const types = [];
stream.on("streamEvent", (event) => types.push(event.type));
const final = await stream.finalMessage();
if (types[0] !== "message_start" || types.at(-1) !== "message_stop" || final.stop_reason !== "max_tokens"
    || final.usage.output_tokens !== 8) {
  throw new Error(`unexpected stream: events ${types.join(",")}, final ${JSON.stringify(final)}`);
}
console.log(`streaming: ${types.length} events (${[...new Set(types)].join(", ")}), stop_reason ${final.stop_reason}`);

const counted = await client.messages.countTokens({
  model,
  system: "You are terse.",
  messages: [{ role: "user", content: "Hello from the Anthropic SDK" }],
});
const reported = whole.usage.input_tokens + (whole.usage.cache_read_input_tokens ?? 0);
if (counted.input_tokens !== reported) {
  throw new Error(`count_tokens says ${counted.input_tokens}, the message reported ${reported}`);
}
console.log(`count_tokens: ${counted.input_tokens} input tokens`);
