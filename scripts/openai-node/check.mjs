// A non-streaming and a streaming chat completion against an Affinity frontend, with the official
// openai npm package. Usage: AFFINITY_URL=http://localhost:8000 node check.mjs
import OpenAI from "openai";

const baseURL = (process.env.AFFINITY_URL ?? "http://localhost:8000") + "/v1";
const model = process.env.AFFINITY_MODEL ?? "affinity-sim";
const client = new OpenAI({ baseURL, apiKey: process.env.AFFINITY_API_KEY ?? "unused" });

const whole = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "Hello from the openai npm package" }],
  max_tokens: 8,
});
const text = whole.choices[0].message.content ?? "";
if (whole.usage?.completion_tokens !== 8) {
  throw new Error(`expected 8 completion tokens, got ${JSON.stringify(whole.usage)}`);
}
console.log(`non-streaming: ${JSON.stringify(text)} (${whole.usage.completion_tokens} tokens)`);

const stream = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "And now streamed" }],
  max_tokens: 8,
  stream: true,
});
let chunks = 0;
let streamed = "";
let finish = null;
for await (const chunk of stream) {
  chunks += 1;
  streamed += chunk.choices[0]?.delta?.content ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
if (chunks < 2 || finish !== "length") {
  throw new Error(`expected a stream of chunks ending with finish_reason length, got ${chunks} chunks, ${finish}`);
}
console.log(`streaming: ${chunks} chunks, ${JSON.stringify(streamed)}, finish_reason ${finish}`);
