#!/usr/bin/python3
"""Writes the pytorch plugin's test fixtures with Debian's python3-torch.

Run from this directory:  /usr/bin/python3 make_fixtures.py

Each checkpoint is written by torch.save. For each one, expected/<name>.json
records what Hugging Face's pickle-to-safetensors conversion produces from
it: the tensors it keeps (name, safetensors dtype, shape, SHA-256 of the
contiguous little-endian bytes) and, for each shared tensor it drops, the
name it keeps instead. The sharing is computed here from the storages
torch.load returns (data pointers and sizes), independently of the Go code,
following the rules of safetensors' convert.py (_remove_duplicate_names over
safetensors.torch._find_shared_tensors):
  * tensors whose untyped storages are the same object (same data pointer and
    size; empty storages excluded) are candidates;
  * sorted by (start, stop, name), consecutive tensors stay in one group while
    each starts before the previous one's stop;
  * a group keeps its alphabetically first tensor that covers its whole
    storage (not in discard_names when possible); the others are dropped;
    a lone tensor that does not cover its storage is kept.
A view's end is computed from its size and strides. (HF's code takes it from
tensor.view(-1), which fails for shared non-contiguous views such as those in
views.bin: there the real conversion stops with an error, and the expected
file records what the same rules give.)
The tests need neither torch nor this script.
"""
import hashlib
import io
import json
import os
import zipfile
from collections import OrderedDict

import torch

torch.manual_seed(0)
HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected")
os.makedirs(EXPECTED, exist_ok=True)

ST_DTYPE = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}


def tensor_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def hf_conversion(state_dict, discard=()):
    """Returns ({kept name: tensor}, {dropped name: kept name})."""
    def span(t):
        es = t.element_size()
        start = t.storage_offset() * es
        if t.nelement() == 0:
            return start, start
        last = t.storage_offset() + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
        return start, last * es + es

    by_storage = OrderedDict()
    for name, t in state_dict.items():
        us = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        nbytes = us.nbytes()
        if nbytes == 0:
            continue
        by_storage.setdefault((us.data_ptr(), nbytes), []).append(name)
    dropped = {}
    for (ptr, nbytes), names in by_storage.items():
        areas = sorted((span(state_dict[n]) + (n,)) for n in names)
        groups = [[areas[0][2]]]
        last_stop = areas[0][1]
        for start, stop, n in areas[1:]:
            if start >= last_stop:
                groups.append([n])
            else:
                groups[-1].append(n)
            last_stop = stop
        for g in groups:
            if len(g) < 2:
                continue
            complete = sorted(n for n in g
                              if state_dict[n].storage_offset() == 0
                              and state_dict[n].nelement() * state_dict[n].element_size() == nbytes)
            if not complete:
                continue  # the conversion refuses this group
            keep = complete[0]
            preferred = [n for n in complete if n not in discard]
            if preferred:
                keep = preferred[0]
            for n in g:
                if n != keep:
                    dropped[n] = keep
    kept = OrderedDict((n, t) for n, t in state_dict.items() if n not in dropped)
    return kept, dropped


def describe(state_dict, discard=()):
    kept, dropped = hf_conversion(state_dict, discard)
    tensors = []
    for name, t in state_dict.items():
        tensors.append({
            "name": name,
            "dtype": ST_DTYPE[t.dtype],
            "shape": list(t.shape),
            "sha256": hashlib.sha256(tensor_bytes(t)).hexdigest(),
            "tied_to": dropped.get(name, ""),
        })
    return {"tensors": tensors, "discard_names": list(discard)}


def write_expected(name, state_dict, discard=()):
    with open(os.path.join(EXPECTED, name + ".json"), "w") as f:
        json.dump(describe(state_dict, discard), f, indent=1)
        f.write("\n")


def save_file(obj, name):
    torch.save(obj, os.path.join(HERE, name))


def save_buffer(obj, name):
    buf = io.BytesIO()
    torch.save(obj, buf)  # a buffer gets the archive name "archive"
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(buf.getvalue())


def load(name):
    return torch.load(os.path.join(HERE, name), map_location="cpu")


# Every dtype torch stores, written to a file (archive name "dtypes").
dtypes = OrderedDict()
dtypes["f64"] = torch.randn(2, 3, dtype=torch.float64)
dtypes["f32"] = torch.randn(3, 2)
dtypes["f16"] = torch.randn(5).half()
dtypes["bf16"] = torch.randn(2, 2).bfloat16()
dtypes["i64"] = torch.tensor([-(2**40), 1, 2**62], dtype=torch.int64)
dtypes["i32"] = torch.tensor([[-7, 8], [2**30, -(2**31)]], dtype=torch.int32)
dtypes["i16"] = torch.tensor([-300, 300, 7], dtype=torch.int16)
dtypes["i8"] = torch.tensor([-128, 127, 0, 5], dtype=torch.int8)
dtypes["u8"] = torch.tensor([0, 255, 128], dtype=torch.uint8)
dtypes["bool"] = torch.tensor([True, False, True, True])
dtypes["scalar"] = torch.tensor(3.5)
dtypes["empty"] = torch.zeros(0, 3)
save_file(dtypes, "dtypes.bin")
write_expected("dtypes", load("dtypes.bin"))

# Views of shared storages and non-contiguous tensors.
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
other = torch.randn(3, 5)
alone = torch.arange(10, dtype=torch.int64)
views = OrderedDict()
views["base"] = base
views["row1"] = base[1]                # offset view, contiguous
views["cols"] = base[:, 2:4]           # strided view
views["transposed"] = base.t()         # complete but not contiguous
views["flat_tail"] = base.view(-1)[20:]
views["other_t"] = other.t()           # own storage, not contiguous
views["alone_part"] = alone[2:7:2]     # lone partial strided view
views["expanded"] = torch.randn(3, 1).expand(3, 4)  # stride 0
save_buffer(views, "views.bin")
write_expected("views", load("views.bin"))

# A language-model-like state dict with tied embeddings.
lm = torch.nn.Module()
lm.embed = torch.nn.Embedding(8, 4)
lm.norm = torch.nn.LayerNorm(4)
lm.head = torch.nn.Linear(4, 8, bias=False)
lm.head.weight = lm.embed.weight
sd = OrderedDict((k.replace("embed.", "model.embed_tokens.").replace("head.", "lm_head."), v)
                 for k, v in lm.state_dict().items())
save_file(sd, "tied.bin")
write_expected("tied", load("tied.bin"))
write_expected("tied_discard", load("tied.bin"), discard=("lm_head.weight",))

# Dicts of state dicts, and parameters.
small = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
save_file({"model": small.state_dict(), "epoch": 3, "optimizer": {"lr": 0.1, "betas": (0.9, 0.99)}}, "nested_model.pt")
write_expected("nested_model", load("nested_model.pt")["model"])
save_file({"state_dict": small.state_dict(), "global_step": 7, "name": b"run-1"}, "lightning.ckpt")
write_expected("lightning", load("lightning.ckpt")["state_dict"])
params = OrderedDict()
params["w"] = torch.nn.Parameter(torch.randn(2, 2))
params["b"] = torch.nn.Parameter(torch.zeros(2), requires_grad=False)
params["size"] = torch.Size([2, 3])
params["dtype"] = torch.float16
save_file(params, "params.pth")
write_expected("params", OrderedDict((k, v) for k, v in load("params.pth").items() if isinstance(v, torch.Tensor)))

# A Hugging Face directory with a sharded checkpoint, and one with a single file.
hf = os.path.join(HERE, "hf_sharded")
os.makedirs(hf, exist_ok=True)
full = OrderedDict()
full["model.embed_tokens.weight"] = torch.randn(8, 4).half()
full["model.layers.0.self_attn.q_proj.weight"] = torch.randn(4, 4).half()
full["model.layers.0.mlp.up_proj.weight"] = torch.randn(6, 4).half()
full["model.norm.weight"] = torch.ones(4)
full["lm_head.weight"] = torch.randn(8, 4).half()
shards = [list(full)[:2], list(full)[2:]]
weight_map = {}
for i, names in enumerate(shards, 1):
    fname = "pytorch_model-%05d-of-%05d.bin" % (i, len(shards))
    torch.save(OrderedDict((n, full[n]) for n in names), os.path.join(hf, fname))
    for n in names:
        weight_map[n] = fname
total = sum(t.nelement() * t.element_size() for t in full.values())
with open(os.path.join(hf, "pytorch_model.bin.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4,
          "num_hidden_layers": 1, "vocab_size": 8, "torch_dtype": "float16"}
with open(os.path.join(hf, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
with open(os.path.join(hf, "tokenizer_config.json"), "w") as f:
    json.dump({"bos_token": "<s>", "eos_token": "</s>"}, f, indent=2)
loaded = OrderedDict()
for i in range(1, len(shards) + 1):
    loaded.update(torch.load(os.path.join(hf, "pytorch_model-%05d-of-%05d.bin" % (i, len(shards)))))
write_expected("hf_sharded", loaded)

hf1 = os.path.join(HERE, "hf_single")
os.makedirs(hf1, exist_ok=True)
torch.save(full, os.path.join(hf1, "pytorch_model.bin"))
with open(os.path.join(hf1, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
write_expected("hf_single", torch.load(os.path.join(hf1, "pytorch_model.bin")))

# The format torch.save wrote before PyTorch 1.6, which the plugin refuses.
torch.save({"x": torch.ones(1)}, os.path.join(HERE, "legacy.pt"), _use_new_zipfile_serialization=False)


# Seed corpus for FuzzUnpickle: the data.pkl of every fixture.
def go_bytes_literal(b):
    out = []
    for c in b:
        if c in (0x22, 0x5c):
            out.append("\\" + chr(c))
        elif 0x20 <= c < 0x7f:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return 'go test fuzz v1\n[]byte("' + "".join(out) + '")\n'


seeds = os.path.join(HERE, "fuzz", "FuzzUnpickle")
os.makedirs(seeds, exist_ok=True)
for name in ["dtypes.bin", "views.bin", "tied.bin", "nested_model.pt", "lightning.ckpt", "params.pth"]:
    with zipfile.ZipFile(os.path.join(HERE, name)) as z:
        pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        with open(os.path.join(seeds, name.replace(".", "_")), "w") as f:
            f.write(go_bytes_literal(z.read(pkl)))


# Malicious pickles: each would create the file "pwned" in the working
# directory if it were loaded with pickle.load or torch.load(weights_only=False).
import pickle  # noqa: E402
import subprocess  # noqa: E402
import runpy  # noqa: E402

MAL = os.path.join(HERE, "malicious")
os.makedirs(MAL, exist_ok=True)


class SystemCall:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


class Eval:
    def __reduce__(self):
        return (eval, ("open('pwned', 'w').close()",))


class Exec:
    def __reduce__(self):
        return (exec, ("open('pwned', 'w').close()",))


class Popen:
    def __reduce__(self):
        return (subprocess.Popen, (["touch", "pwned"],))


class ImportOS:
    def __reduce__(self):
        return (__import__, ("os",))


class GetattrImport:
    def __reduce__(self):
        return (getattr, (ImportOS(), "system"))


class RunCode:
    def __reduce__(self):
        return (runpy._run_code, ("open('pwned', 'w').close()", {}))


payloads = {"os_system": SystemCall(), "eval": Eval(), "exec": Exec(), "popen": Popen(),
            "getattr": GetattrImport(), "runpy": RunCode()}
for name, obj in payloads.items():
    for proto in (2, 4):
        with open(os.path.join(MAL, "%s_p%d.pkl" % (name, proto)), "wb") as f:
            pickle.dump(obj, f, protocol=proto)
# The classic hand-written protocol 0 payload, and INST.
with open(os.path.join(MAL, "os_system_p0.pkl"), "wb") as f:
    f.write(b"cos\nsystem\n(S'touch pwned'\ntR.")
with open(os.path.join(MAL, "inst_p0.pkl"), "wb") as f:
    f.write(b"(S'touch pwned'\nios\nsystem\n.")
# Real checkpoints with a payload next to genuine tensors.
save_file({"weight": torch.ones(2), "evil": SystemCall()}, "malicious/state_dict_os_system.bin")
save_file({"state_dict": {"weight": torch.ones(2)}, "hook": Exec()}, "malicious/nested_exec.pt")

# Seed corpus for FuzzCheckpoint: whole checkpoints.
seeds = os.path.join(HERE, "fuzz", "FuzzCheckpoint")
os.makedirs(seeds, exist_ok=True)
for name in ["dtypes.bin", "views.bin", "tied.bin", "params.pth"]:
    with open(os.path.join(HERE, name), "rb") as src, open(os.path.join(seeds, name.replace(".", "_")), "w") as f:
        f.write(go_bytes_literal(src.read()))
