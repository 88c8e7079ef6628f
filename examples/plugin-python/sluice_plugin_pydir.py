#!/usr/bin/env python3
"""sluice-plugin-pydir: a Sluice format plugin written in Python.

It speaks the plugin protocol (sluice.plugin.v1, docs/plugins.md "The
protocol") with grpcio alone, no Sluice code: go-plugin's handshake with
mutual TLS, the Plugin, Source and Sink services, and the inline-chunk data
plane. It serves source and sink "pydir": a directory holding manifest.json
(names, dtypes, shapes, sizes; metadata is not kept) and one NNNNN.bin file
per tensor, its bytes as they flow.

Needs python3 with grpcio, protobuf (4.21+) and cryptography; on Debian:
apt-get install python3-grpcio python3-protobuf python3-cryptography.
Install it as an executable named sluice-plugin-pydir on SLUICE_PLUGIN_PATH,
e.g. a shell script that runs `exec python3 /path/to/sluice_plugin_pydir.py`.
"""

import base64
import datetime
import itertools
import json
import os
import sys
import tempfile
import threading
from concurrent import futures

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

sys.dont_write_bytecode = True  # leave no __pycache__ beside the plugin
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_plugin_1_1_pb2 as pb  # noqa: E402  (generated from sdk/proto/v1/sluice_plugin_1.1.proto)

COOKIE_KEY = "SLUICE_PLUGIN_MAGIC_COOKIE"
COOKIE_VALUE = "8f1d2c3b7a6e4f50b9c8d7e6f5a4b3c2"
APP_PROTOCOL = 1          # sluice.plugin.v1
PROTOCOL_MINOR = 1        # the newest minor this plugin knows
MAX_INLINE = 1 << 20      # the largest inline chunk
MAX_MESSAGE = 256 << 20   # gRPC message limit, both ways

# ---------------------------------------------------------------------------
# Errors: a gRPC status with a google.rpc.ErrorInfo detail saying whose
# fault it is (BAD_INPUT: the files; BAD_CONFIG: the pipeline, with the
# attribute). The detail travels in the "grpc-status-details-bin" trailer as
# a serialized google.rpc.Status, encoded here by hand to need no more
# packages.


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, wire, payload):
    key = _varint(num << 3 | wire)
    if wire == 0:
        return key + _varint(payload)
    return key + _varint(len(payload)) + payload


def _status_details(code, message, reason, metadata):
    info = _field(1, 2, reason.encode())
    for k, v in metadata.items():
        info += _field(3, 2, _field(1, 2, k.encode()) + _field(2, 2, v.encode()))
    any_ = _field(1, 2, b"type.googleapis.com/google.rpc.ErrorInfo") + _field(2, 2, info)
    return _field(1, 0, code.value[0]) + _field(2, 2, message.encode()) + _field(3, 2, any_)


def fail(context, kind, message, attribute=""):
    """Ends the call with a bad-input or bad-config error."""
    if kind == "BAD_CONFIG":
        code, meta = grpc.StatusCode.FAILED_PRECONDITION, {"attribute": attribute}
    else:
        code, meta = grpc.StatusCode.INVALID_ARGUMENT, {}
    context.set_trailing_metadata((("grpc-status-details-bin", _status_details(code, message, kind, meta)),))
    context.abort(code, message)


# ---------------------------------------------------------------------------
# The pydir format.

def schema():
    return pb.Schema(attributes=[pb.Attribute(name="path", type="string", required=True,
                                              doc="The directory: manifest.json and one NNNNN.bin per tensor.")])


def config_path(context, raw):
    try:
        path = json.loads(raw or b"{}").get("path") or ""
    except ValueError:
        path = ""
    if not path:
        fail(context, "BAD_CONFIG", "path must be set", "path")
    return path


def manifest_to_json(m):
    return {"tensors": [{"name": t.name, "dtype": t.dtype, "shape": list(t.shape), "size": t.size} for t in m.tensors]}


def read_manifest(context, directory):
    path = os.path.join(directory, "manifest.json")
    try:
        with open(path, "rb") as f:
            doc = json.load(f)
        tensors = [pb.TensorInfo(name=t["name"], dtype=t["dtype"], shape=t["shape"], size=t["size"]) for t in doc["tensors"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(context, "BAD_INPUT", "%s: not a pydir manifest: %s" % (path, e))
    for i, t in enumerate(tensors):
        data = os.path.join(directory, "%05d.bin" % i)
        if not os.path.isfile(data) or os.path.getsize(data) != t.size:
            fail(context, "BAD_INPUT", "%s: tensor %r should hold %d bytes" % (data, t.name, t.size))
    return pb.Manifest(tensors=tensors)


class Plugin:
    def __init__(self):
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.sources = {}   # session → directory
        self.sinks = {}     # session → sink state

    # Plugin service ---------------------------------------------------------
    def GetInfo(self, req, context):
        return pb.GetInfoResponse(
            name="pydir", version="0.1.0", protocol_minor=PROTOCOL_MINOR,
            components=[
                pb.Component(kind=pb.Component.SOURCE, name="pydir", doc="Reads a pydir directory (Python plugin).", schema=schema()),
                pb.Component(kind=pb.Component.SINK, name="pydir", doc="Writes a pydir directory (Python plugin).", schema=schema()),
            ],
            # No arena, no file references: every byte travels inline.
            capabilities=pb.Capabilities(arena=False, file_ref=False, max_inline=MAX_INLINE))

    def Probe(self, req, context):
        return pb.ProbeResponse(score=0)

    # Source service ---------------------------------------------------------
    def SourceOpen(self, req, context):
        path = config_path(context, req.config_json)
        if not os.path.isdir(path):
            fail(context, "BAD_INPUT", "%s: not a directory" % path)
        with self.lock:
            sid = next(self.ids)
            self.sources[sid] = path
        return pb.OpenResponse(session=sid)

    def Describe(self, req, context):
        return pb.DescribeResponse(manifest=read_manifest(context, self.sources[req.session]))

    def Read(self, requests, context):
        start = next(requests).start
        directory = self.sources[start.session]
        m = read_manifest(context, directory)
        index = [t.name for t in m.tensors].index(start.tensor)
        size = m.tensors[index].size
        n = MAX_INLINE if not start.max_chunk else min(start.max_chunk, MAX_INLINE)
        align = start.align or 1
        if n >= align:
            n -= n % align   # no chunk but the last splits a quantization block
        with open(os.path.join(directory, "%05d.bin" % index), "rb") as f:
            off = 0
            while True:
                data = f.read(min(n, size - off))
                last = off + len(data) == size
                yield pb.Chunk(offset=off, length=len(data), inline=data, last=last)
                off += len(data)
                if last:
                    return

    def SourceClose(self, req, context):
        with self.lock:
            self.sources.pop(req.session, None)
        return pb.Empty()

    # Sink service -----------------------------------------------------------
    def SinkOpen(self, req, context):
        path = config_path(context, req.config_json)
        with self.lock:
            sid = next(self.ids)
            self.sinks[sid] = {"dir": path, "manifest": None, "tmp": None, "written": set()}
        return pb.OpenResponse(session=sid)

    def Plan(self, req, context):
        state = self.sinks[req.session]
        notes = []
        if len(req.manifest.metadata):
            notes.append(pb.Decision(msg="pydir keeps no metadata: %d keys are not written" % len(req.manifest.metadata)))
        files = [pb.PlannedFile(path=os.path.join(state["dir"], "manifest.json"), tensors=len(req.manifest.tensors))]
        return pb.PlanResponse(files=files, notes=notes)

    def Begin(self, req, context):
        state = self.sinks[req.session]
        parent = os.path.dirname(os.path.abspath(state["dir"]))
        os.makedirs(parent, exist_ok=True)
        # Everything goes to a temporary directory, renamed at Commit.
        state["tmp"] = tempfile.mkdtemp(prefix=".pydir-tmp-", dir=parent)
        state["manifest"] = req.manifest
        return pb.Empty()

    def Write(self, requests, context):
        start = next(requests).start
        state = self.sinks[start.session]
        names = [t.name for t in state["manifest"].tensors]
        if start.tensor not in names:
            fail(context, "BAD_INPUT", "tensor %r was not planned" % start.tensor)
        index = names.index(start.tensor)
        got = 0
        with open(os.path.join(state["tmp"], "%05d.bin" % index), "wb") as f:
            for req in requests:
                chunk = req.chunk
                if chunk.WhichOneof("payload") != "inline":
                    fail(context, "BAD_INPUT", "pydir takes inline chunks only")
                f.seek(chunk.offset)
                f.write(chunk.inline)
                got += len(chunk.inline)
                if chunk.last:
                    break
        if got != start.size:
            fail(context, "BAD_INPUT", "tensor %r: %d of %d bytes arrived" % (start.tensor, got, start.size))
        with self.lock:
            state["written"].add(start.tensor)
        yield pb.WriteAck(done=True)

    def Commit(self, req, context):
        state = self.sinks[req.session]
        missing = [t.name for t in state["manifest"].tensors if t.name not in state["written"]]
        if missing:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "tensors never arrived: %s" % ", ".join(missing))
        body = json.dumps(manifest_to_json(state["manifest"]), indent=2).encode() + b"\n"
        with open(os.path.join(state["tmp"], "manifest.json"), "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        if os.path.isdir(state["dir"]):
            old = state["dir"] + ".old"
            os.rename(state["dir"], old)
            os.rename(state["tmp"], state["dir"])
            for name in os.listdir(old):
                os.remove(os.path.join(old, name))
            os.rmdir(old)
        else:
            os.rename(state["tmp"], state["dir"])
        state["tmp"] = None
        arts = [pb.Artifact(path=os.path.join(state["dir"], "manifest.json"), size=len(body))]
        for i, t in enumerate(state["manifest"].tensors):
            arts.append(pb.Artifact(path=os.path.join(state["dir"], "%05d.bin" % i), size=t.size))
        return pb.CommitResponse(artifacts=arts)

    def Abort(self, req, context):
        state = self.sinks.get(req.session)
        if state and state["tmp"] and os.path.isdir(state["tmp"]):
            for name in os.listdir(state["tmp"]):
                os.remove(os.path.join(state["tmp"], name))
            os.rmdir(state["tmp"])
            state["tmp"] = None
        return pb.Empty()


# ---------------------------------------------------------------------------
# gRPC plumbing without generated service stubs.

def _handlers(service, methods):
    out = {}
    for name, (fn, req_type, resp_type, streaming) in methods.items():
        kind = grpc.stream_stream_rpc_method_handler if streaming else grpc.unary_unary_rpc_method_handler
        out[name] = kind(fn, request_deserializer=req_type.FromString, response_serializer=resp_type.SerializeToString)
    return grpc.method_handlers_generic_handler(service, out)


def _raw_handlers(service, methods):
    out = {name: grpc.unary_unary_rpc_method_handler(fn, request_deserializer=bytes, response_serializer=bytes)
           for name, fn in methods.items()}
    return grpc.method_handlers_generic_handler(service, out)


def self_signed_cert():
    """A certificate for localhost, as go-plugin's AutoMTLS expects."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sluice-plugin-pydir")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(seconds=30)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                                         data_encipherment=False, key_agreement=True, key_cert_sign=True,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM), cert.public_bytes(serialization.Encoding.DER)


def main():
    if os.environ.get(COOKIE_KEY) != COOKIE_VALUE:
        sys.stderr.write("This binary is a Sluice plugin. It is not meant to be executed directly.\n")
        sys.exit(1)
    versions = [int(v) for v in os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(APP_PROTOCOL)).split(",") if v.strip()]
    if APP_PROTOCOL not in versions:
        sys.stderr.write("the host speaks plugin protocols %s; this plugin speaks %d\n" % (versions, APP_PROTOCOL))
        sys.exit(1)

    p = Plugin()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16),
                         options=[("grpc.max_receive_message_length", MAX_MESSAGE),
                                  ("grpc.max_send_message_length", MAX_MESSAGE)])
    server.add_generic_rpc_handlers((
        _handlers("sluice.plugin.v1.Plugin", {
            "GetInfo": (p.GetInfo, pb.GetInfoRequest, pb.GetInfoResponse, False),
            "Probe": (p.Probe, pb.ProbeRequest, pb.ProbeResponse, False),
        }),
        _handlers("sluice.plugin.v1.Source", {
            "Open": (p.SourceOpen, pb.OpenRequest, pb.OpenResponse, False),
            "Describe": (p.Describe, pb.SessionRequest, pb.DescribeResponse, False),
            "Read": (p.Read, pb.ReadRequest, pb.Chunk, True),
            "Close": (p.SourceClose, pb.SessionRequest, pb.Empty, False),
        }),
        _handlers("sluice.plugin.v1.Sink", {
            "Open": (p.SinkOpen, pb.OpenRequest, pb.OpenResponse, False),
            "Plan": (p.Plan, pb.PlanRequest, pb.PlanResponse, False),
            "Begin": (p.Begin, pb.BeginRequest, pb.Empty, False),
            "Write": (p.Write, pb.WriteRequest, pb.WriteAck, True),
            "Commit": (p.Commit, pb.SessionRequest, pb.CommitResponse, False),
            "Abort": (p.Abort, pb.SessionRequest, pb.Empty, False),
        }),
        # go-plugin's health check (service "plugin" is SERVING: status 1)
        # and its controller, whose Shutdown ends the process cleanly.
        _raw_handlers("grpc.health.v1.Health", {"Check": lambda req, ctx: b"\x08\x01"}),
        _raw_handlers("plugin.GRPCController", {"Shutdown": lambda req, ctx: (threading.Timer(0.1, server.stop, (0,)).start(), b"")[1]}),
    ))

    key_pem, cert_pem, cert_der = self_signed_cert()
    client_cert = os.environ.get("PLUGIN_CLIENT_CERT", "").encode()
    creds = grpc.ssl_server_credentials([(key_pem, cert_pem)], root_certificates=client_cert or None,
                                        require_client_auth=bool(client_cert))
    sock_dir = tempfile.mkdtemp(prefix="plugin", dir=os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or None)
    sock = os.path.join(sock_dir, "sock")
    server.add_secure_port("unix:" + sock, creds)
    server.start()
    # The handshake: the one line the host waits for on stdout.
    sys.stdout.write("1|%d|unix|%s|grpc|%s\n" % (APP_PROTOCOL, sock, base64.b64encode(cert_der).decode().rstrip("=")))
    sys.stdout.flush()
    server.wait_for_termination()
    try:
        os.remove(sock)
        os.rmdir(sock_dir)
    except OSError:
        pass


if __name__ == "__main__":
    main()
