// Independent oracle: Hugging Face's own JavaScript tokenizer and Jinja engine.
// stdin: JSON lines {"dir": D, "prompt": S} or {"dir": D, "messages": [...], "tools": [...],
//   "add_generation_prompt": B, "chat_template_kwargs": {...}}; stdout: {"text": S, "ids": [...]} or {"error": S}.
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const cache = new Map();
function load(dir) {
  let t = cache.get(dir);
  if (!t) {
    const json = JSON.parse(readFileSync(dir + "/tokenizer.json", "utf8"));
    const config = JSON.parse(readFileSync(dir + "/tokenizer_config.json", "utf8"));
    t = { tokenizer: new Tokenizer(json, config), config, template: config.chat_template ? new Template(config.chat_template) : null };
    cache.set(dir, t);
  }
  return t;
}
const content = (tok) => (tok && typeof tok === "object" ? tok.content : tok) ?? null;

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  try {
    const req = JSON.parse(line);
    const t = load(req.dir);
    let text;
    if (req.prompt !== undefined) {
      text = req.prompt;
    } else {
      const ctx = {
        ...(req.chat_template_kwargs ?? {}),
        messages: req.messages,
        add_generation_prompt: req.add_generation_prompt ?? false,
        bos_token: content(t.config.bos_token),
        eos_token: content(t.config.eos_token),
        unk_token: content(t.config.unk_token),
        pad_token: content(t.config.pad_token),
      };
      if (req.tools !== undefined) ctx.tools = req.tools;
      text = t.template.render(ctx);
    }
    const ids = t.tokenizer.encode(text, { add_special_tokens: false }).ids;
    process.stdout.write(JSON.stringify({ text, ids }) + "\n");
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: String(e && e.message || e) }) + "\n");
  }
}
