// Reads GGUF files with the official @huggingface/gguf parser and prints
// what it saw as JSON, for plugins/gguf's interop test.
//
//   node read.mjs FILE...          one JSON object per file, in an array
//   node read.mjs --bench N FILE   parse FILE N times, print timings (ms)
import { gguf, GGUFValueType } from "@huggingface/gguf";

const f64 = new DataView(new ArrayBuffer(8));
function floatBits(v) {
	if (Number.isNaN(v)) return "nan";
	f64.setFloat64(0, v);
	return f64.getBigUint64(0).toString(16).padStart(16, "0");
}

// norm renders one value as strings so Go can compare it exactly.
function norm(type, sub, v) {
	switch (type) {
		case GGUFValueType.FLOAT32:
		case GGUFValueType.FLOAT64:
			return floatBits(v);
		case GGUFValueType.BOOL:
			return v ? "1" : "0";
		case GGUFValueType.STRING:
			return v;
		case GGUFValueType.ARRAY:
			return v.map((x) => norm(sub, undefined, x));
		default:
			return v.toString();
	}
}

async function read(path) {
	const out = await gguf(path, { allowLocalFile: true, typedMetadata: true });
	const meta = {};
	for (const [k, e] of Object.entries(out.typedMetadata)) {
		if (k === "version" || k === "tensor_count" || k === "kv_count") continue;
		meta[k] = { type: e.type, subType: e.subType ?? null, value: norm(e.type, e.subType, e.value) };
	}
	return {
		path,
		version: out.metadata.version,
		tensorCount: out.metadata.tensor_count.toString(),
		kvCount: out.metadata.kv_count.toString(),
		littleEndian: out.littleEndian,
		tensorDataOffset: out.tensorDataOffset.toString(),
		keys: Object.keys(out.metadata).filter((k) => !["version", "tensor_count", "kv_count"].includes(k)),
		metadata: meta,
		tensors: out.tensorInfos.map((t) => ({
			name: t.name,
			nDims: t.n_dims,
			shape: t.shape.map((d) => d.toString()),
			dtype: t.dtype,
			offset: t.offset.toString(),
		})),
	};
}

const args = process.argv.slice(2);
if (args[0] === "--bench") {
	const n = Number(args[1]);
	const times = [];
	for (let i = 0; i < n; i++) {
		const start = process.hrtime.bigint();
		await gguf(args[2], { allowLocalFile: true });
		times.push(Number(process.hrtime.bigint() - start) / 1e6);
	}
	console.log(JSON.stringify({ ms: times }));
} else {
	const results = [];
	for (const p of args) results.push(await read(p));
	console.log(JSON.stringify(results));
}
