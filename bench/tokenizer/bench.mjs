// Reference side of the tokenizer benchmark (see main.go): encodes the same
// paragraphs with @huggingface/tokenizers and prints one JSON line with the
// least CPU time (and its wall time), the token count and a hash of the ids. Prints {"skip": …} when
// the package is not installed.
//
//   node bench.mjs tokenizer.json tokenizer_config.json chunks.json reps
import fs from "node:fs";

let Tokenizer;
try {
  ({ Tokenizer } = await import("@huggingface/tokenizers"));
} catch (e) {
  console.log(JSON.stringify({ skip: `@huggingface/tokenizers is not installed: ${e.message}` }));
  process.exit(0);
}

const [tokPath, cfgPath, chunksPath, repsArg] = process.argv.slice(2);
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokPath, "utf8")), JSON.parse(fs.readFileSync(cfgPath, "utf8")));
const chunks = JSON.parse(fs.readFileSync(chunksPath, "utf8"));
const reps = Number(repsArg || 3);

let best = null;
for (let r = 0; r < reps; r++) {
  let h = 2166136261 >>> 0;
  let n = 0;
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (const c of chunks) {
    const ids = tokenizer.encode(c, { add_special_tokens: false }).ids;
    for (const id of ids) h = Math.imul((h ^ id) >>> 0, 16777619) >>> 0;
    n += ids.length;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cu = process.cpuUsage(c0);
  const cpu = (cu.user + cu.system) / 1e6;
  if (best === null || cpu < best.cpu) best = { seconds, cpu, tokens: n, hash: h };
}
console.log(JSON.stringify(best));
