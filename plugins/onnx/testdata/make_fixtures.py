#!/usr/bin/python3
"""Writes the onnx plugin's test fixtures with Debian's python3-onnx.

Run from this directory:  /usr/bin/python3 make_fixtures.py

model.onnx holds initializers of every supported dtype, both as raw_data and
in the typed fields (float_data, int32_data, int64_data, double_data,
uint64_data); external.onnx keeps its initializers in external.data.
expected/<name>.json records, from onnx's own reader: each initializer's
name, data type, dims and the SHA-256 of its little-endian bytes, and the
model's metadata. The tests need neither onnx nor this script.
"""
import hashlib
import json
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)


def tensors():
    out = []

    def add(name, dtype, dims, vals, raw):
        t = helper.make_tensor(name, dtype, dims, vals, raw=raw)
        out.append(t)

    f32 = rng.standard_normal((2, 3)).astype(np.float32)
    add("w_f32_raw", TensorProto.FLOAT, [2, 3], f32.tobytes(), True)
    add("b_f32_typed", TensorProto.FLOAT, [3], [0.5, -1.25, 3.0], False)
    add("f64_typed", TensorProto.DOUBLE, [2], [1e300, -2.5], False)
    add("f64_raw", TensorProto.DOUBLE, [2], np.array([3.25, -0.0]).tobytes(), True)
    f16 = rng.standard_normal(4).astype(np.float16)
    add("f16_raw", TensorProto.FLOAT16, [4], f16.tobytes(), True)
    add("f16_typed", TensorProto.FLOAT16, [2, 2], f16.reshape(2, 2), False)
    add("bf16_typed", TensorProto.BFLOAT16, [3], [1.0, -2.5, 3.140625], False)
    add("i8_typed", TensorProto.INT8, [4], [-128, -1, 0, 127], False)
    add("u8_typed", TensorProto.UINT8, [3], [0, 200, 255], False)
    add("i16_typed", TensorProto.INT16, [2], [-30000, 30000], False)
    add("u16_typed", TensorProto.UINT16, [2], [0, 65535], False)
    add("i32_typed", TensorProto.INT32, [3], [-(2**31), 0, 2**31 - 1], False)
    add("i64_typed", TensorProto.INT64, [2, 1], [-(2**63), 2**62], False)
    add("i64_raw", TensorProto.INT64, [2], np.array([7, -7], dtype=np.int64).tobytes(), True)
    add("u32_typed", TensorProto.UINT32, [2], [0, 2**32 - 1], False)
    add("u64_typed", TensorProto.UINT64, [2], [1, 2**64 - 1], False)
    add("bool_typed", TensorProto.BOOL, [4], [True, False, False, True], False)
    add("scalar_f32", TensorProto.FLOAT, [], [42.0], False)
    add("empty_f32", TensorProto.FLOAT, [0, 3], b"", True)
    out[0].doc_string = "the weight"
    return out


def model(inits):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    nodes = [helper.make_node("MatMul", ["x", "w_f32_raw"], ["xw"]),
             helper.make_node("Add", ["xw", "b_f32_typed"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [x], [y], initializer=inits, doc_string="a tiny graph")
    m = helper.make_model(graph, producer_name="sluice-fixtures", producer_version="1.0",
                          doc_string="fixture model", domain="org.sluice", model_version=3,
                          opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    helper.set_model_props(m, {"author": "sluice", "license": "CC0"})
    return m


def tensor_bytes(t):
    if t.data_type == TensorProto.BFLOAT16:
        if t.raw_data:
            return t.raw_data
        return np.array(t.int32_data, dtype=np.uint16).tobytes()
    a = numpy_helper.to_array(t)
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def expected(m):
    return {
        "ir_version": m.ir_version,
        "producer_name": m.producer_name,
        "producer_version": m.producer_version,
        "domain": m.domain,
        "model_version": m.model_version,
        "doc_string": m.doc_string,
        "graph_name": m.graph.name,
        "graph_doc_string": m.graph.doc_string,
        "opsets": {o.domain: o.version for o in m.opset_import},
        "metadata_props": {p.key: p.value for p in m.metadata_props},
        "initializers": [{
            "name": t.name,
            "data_type": t.data_type,
            "dims": list(t.dims),
            "sha256": hashlib.sha256(tensor_bytes(t)).hexdigest(),
        } for t in m.graph.initializer],
    }


def write_json(name, obj):
    os.makedirs(os.path.join(HERE, "expected"), exist_ok=True)
    with open(os.path.join(HERE, "expected", name + ".json"), "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


m = model(tensors())
onnx.checker.check_model(m)
onnx.save(m, os.path.join(HERE, "model.onnx"))
write_json("model", expected(onnx.load(os.path.join(HERE, "model.onnx"))))

ext_dir = os.path.join(HERE, "external")
shutil.rmtree(ext_dir, ignore_errors=True)
os.makedirs(ext_dir)
m = model(tensors())
onnx.save_model(m, os.path.join(ext_dir, "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="weights.data", size_threshold=0)
write_json("external", expected(onnx.load(os.path.join(ext_dir, "model.onnx"))))


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


seeds = os.path.join(HERE, "fuzz", "FuzzModel")
os.makedirs(seeds, exist_ok=True)
for name, path in [("model", "model.onnx"), ("external", "external/model.onnx")]:
    with open(os.path.join(HERE, path), "rb") as src, open(os.path.join(seeds, name), "w") as f:
        f.write(go_bytes_literal(src.read()))
