// Sluice plugin protocol, version 1.10: version 1.9 plus outputs kept in
// the page cache on request.
//
// Every minor is a file of its own and is frozen once released; the Go code
// in this package is generated from the newest one. A minor only adds fields
// and messages that an older peer ignores (protobuf skips unknown fields), and
// a peer uses an addition only when the other side announced it, never
// because of a version number. Plugins built against 1.0 therefore run under
// a 1.5 host, and the reverse.
//
// Added in 1.10:
//   - BeginRequest.keep_cache: the user wants the outputs to stay in the
//     page cache once written (sluice run --keep-cache), for a next step that
//     reads them at once. A sink that drops the pages of its outputs from the
//     cache as it goes (behind its early syncs, once nothing of its process
//     reads them) keeps them instead; so does the host for the files it
//     writes into over a direct lane. An older peer ignores the field and
//     drops, or keeps, as it always did.
//
// Added in 1.9:
//   - GetInfoRequest.host_digests: the host computes the SHA-256 of a sink's
//     output files that it writes into over a direct lane, when the plugin
//     hands that digest over. A plugin whose sink was asked for digests
//     (BeginRequest.digests) may then, on a direct lane, after its
//     DirectTargets frame, send 'h' frames (a DirectHashTo each): the host
//     computes the SHA-256 of files[file], and every byte before `end` is
//     written for good (the tensors the host wrote itself count only once
//     the plugin says so, their padding included). `end` never goes down. The
//     host hashes those bytes as they come, in its own process, and the rest
//     of the file once the sink's Commit has renamed it, reading through the
//     descriptor the lane passed; the sink then reports no sha256 for that
//     file in CommitResponse, and the host fills in its own. Every 'h' frame
//     precedes the lane's 's'. Out of process, the sink's process so stays
//     idle while the host converts, where it used to read back and hash every
//     byte the host wrote: a third busy thread, in a third process, on
//     machines with as many cores as the host keeps busy.
//
// Added in 1.8:
//   - Manifest.packed_tensors: the manifest's tensors as one block (a
//     packed tensor table) in place of Manifest.tensors, so that a model of
//     20,000 tensors crosses as one field, not 20,000 messages, strings and
//     maps to encode, allocate and check one by one, and each file path and
//     dtype crosses once. Every number in the block is an unsigned varint
//     (LEB128, as protobuf writes one). The block holds a string table (its
//     count, then each string's byte length and bytes: every distinct dtype,
//     attribute key, attribute value and file path), then the tensor count
//     and each tensor: its name (byte length and bytes), its dtype (an index
//     into the strings), its rank and dimensions (outermost first), its
//     size, its attribute count and a key index and value index for each
//     (keys in byte order, none twice), and its location (0 for none, or 1
//     plus the path's index, then offset and length). Every string is UTF-8
//     and nothing follows the last tensor. A manifest with packed_tensors
//     set lists no tensors in Manifest.tensors;
//   - PlanResponse.packed_convert: a plan's conversions as one block in
//     place of PlanResponse.convert: a string table as above (every distinct
//     dtype and reason), the count, then for each conversion the tensor's
//     index among the tensors of the manifest planned (PlanRequest's), the
//     dtype's index and the reason's index; nothing follows the last;
//   - DirectTargets.packed_tensors: a direct lane's targets as one block in
//     place of DirectTargets.tensors: the count, then for each target the
//     tensor's name (byte length and bytes, UTF-8), file, offset and size;
//     nothing follows the last;
//   - Capabilities.packed_tensors: the plugin takes packed_tensors in what
//     the host sends (Plan, Begin); GetInfoRequest.host_packed_tensors: the
//     host takes the three blocks in what the plugin sends (Describe, Plan's
//     answer, a direct lane's targets). Each side sends them only to a peer
//     that announced it.
//
// Added in 1.7:
//   - Capabilities.direct_writes: the plugin serves direct lanes. The host
//     opens one as it opens a write lane, with the byte 'd' as the data that
//     carries the socket (a write lane's byte is 0), after a sink's Begin
//     succeeded. It sends 'm' (a SessionRequest naming the sink). The
//     plugin answers with the sink's open output files: one or more messages
//     of one byte each, 'f' when more follow and 'F' for the last, carrying
//     up to 200 file descriptors each (SCM_RIGHTS), then 'm' (a
//     DirectTargets, whose files name the descriptors in the order they came)
//     in a frame. Each DirectTarget is a tensor whose bytes the sink writes
//     to one range of one file unchanged; the host then writes those
//     tensors' bytes into the files itself (pwrite, copy_file_range), never
//     outside their ranges, and tells the plugin which tensors it wrote in
//     'm' frames (DirectWritten), without waiting for an answer. A sink
//     with nothing to offer answers 'F' with no descriptors and an empty
//     DirectTargets. Before Commit the host sends 'e'; the plugin has then
//     recorded every tensor the host told it of, and ends the lane with 's'
//     (a google.rpc.Status, code 0 when every one was taken). A lane closed
//     without its 'e' was canceled (Abort follows). Out of process, a
//     quantizing run so costs the sink's process nothing per chunk: no
//     message, no acknowledgement, no thread woken to copy bytes the host
//     could copy itself.
//
// Added in 1.6:
//   - Capabilities.write_lanes: the plugin serves WriteSeries streams over
//     write lanes as well as over gRPC. A host that passed the plugin a lane
//     socket at spawn (a Unix socket, its descriptor in SLUICE_LANE_FD)
//     opens a lane by sending the plugin one end of a new socket pair over
//     it (SCM_RIGHTS, with one byte of data), and speaks WriteSeries over
//     that pair in frames: a little-endian u32 length n, then n bytes, a
//     kind byte followed by the payload. The host sends 'm' (a
//     WriteRequest) and 'e' (no payload: the host closes its side, what
//     CloseSend does); the plugin sends 'm' (a WriteAck) and, as its last
//     frame, 's' (a google.rpc.Status, code 0 when the stream ended well).
//     A lane that closes without its 'e' or 's' was canceled. A frame is at
//     most 256 MiB, as a gRPC message of the protocol is. Every message means what it means on gRPC; the lane only
//     spares both processes HTTP/2, TLS and the goroutines between them,
//     which cost several times the work of a small write on a machine of two
//     cores.
//
// Added in 1.5:
//   - Value.packed_strs: a string array as one block in GGUF's layout (each
//     string a little-endian u64 byte length, then its bytes) with its count,
//     in place of Value.strs, so that a vocabulary of 150,000 tokens crosses
//     as one field, not 150,000 strings to encode, allocate and check one by
//     one;
//   - Capabilities.packed_strings: the plugin takes packed_strs in what the
//     host sends (Plan, Begin); GetInfoRequest.host_packed_strings: the host
//     takes it in what the plugin sends (Describe). Each side sends it only
//     to a peer that announced it.
//
// Added in 1.4:
//   - WriteStart.data: in a WriteFiles, a tensor whose bytes the host made
//     (converted or quantized) and holds whole in one chunk, written
//     like the tensors of file references beside it, so that a model of many
//     small tensors costs a message per several tensors when it is converted
//     too, not four messages and a goroutine each;
//   - Chunk.slot_offset: where in its slot such a tensor's bytes begin, as
//     small tensors share a slot;
//   - Capabilities.write_data: the plugin takes such tensors; the host sends
//     them only then.
//
// Added in 1.3:
//   - Sink.WriteSeries: the writes of many tensors, one after another, over
//     one stream, where Write opens a stream per tensor (a model can have
//     tens of thousands of tensors, and a stream costs both processes more
//     than a message);
//   - WriteRequest.files and WriteAck.written: in a WriteSeries, the writes
//     of several tensors whose bytes all lie in files, in one message;
//   - Capabilities.write_series: the plugin serves WriteSeries (files
//     included); the host calls it only then.
//
// Added in 1.2:
//   - BeginRequest.digests: the host asks the sink for the SHA-256 of every
//     file it commits (Artifact.sha256), which a sink can compute while it
//     writes; a sink that ignores it reports none, and the host reads the
//     files itself;
//   - BeginRequest.no_fsync: the outputs need not be synced before their
//     rename (the user gave up durability against a crash of the machine).
//
// Added in 1.1:
//   - PlanResponse.partitions: the sink can write a subset of its shards and
//     finish the set later;
//   - BeginRequest.shards and BeginRequest.finalize: the host asks for that
//     subset, or for the files that describe the whole set.
//
// Control travels over gRPC (hashicorp/go-plugin). Tensor bytes travel
// beside it when both ends share a machine: as file references (bytes that
// sit unchanged in a file), as slots of a shared memory arena the host passes
// to the plugin at spawn, or, as a fallback, inline in Chunk messages of at
// most 1 MiB.

// Code generated by protoc-gen-go-grpc. DO NOT EDIT.
// versions:
// - protoc-gen-go-grpc v1.6.2
// - protoc             v3.21.12
// source: sluice_plugin_1.10.proto

package pluginv1

import (
	context "context"
	grpc "google.golang.org/grpc"
	codes "google.golang.org/grpc/codes"
	status "google.golang.org/grpc/status"
)

// This is a compile-time assertion to ensure that this generated file
// is compatible with the grpc package it is being compiled against.
// Requires gRPC-Go v1.64.0 or later.
const _ = grpc.SupportPackageIsVersion9

const (
	Plugin_GetInfo_FullMethodName = "/sluice.plugin.v1.Plugin/GetInfo"
	Plugin_Probe_FullMethodName   = "/sluice.plugin.v1.Plugin/Probe"
)

// PluginClient is the client API for Plugin service.
//
// For semantics around ctx use and closing/ending streaming RPCs, please refer to https://pkg.go.dev/google.golang.org/grpc/?tab=doc#ClientConn.NewStream.
//
// Plugin describes the binary and probes files.
type PluginClient interface {
	GetInfo(ctx context.Context, in *GetInfoRequest, opts ...grpc.CallOption) (*GetInfoResponse, error)
	Probe(ctx context.Context, in *ProbeRequest, opts ...grpc.CallOption) (*ProbeResponse, error)
}

type pluginClient struct {
	cc grpc.ClientConnInterface
}

func NewPluginClient(cc grpc.ClientConnInterface) PluginClient {
	return &pluginClient{cc}
}

func (c *pluginClient) GetInfo(ctx context.Context, in *GetInfoRequest, opts ...grpc.CallOption) (*GetInfoResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(GetInfoResponse)
	err := c.cc.Invoke(ctx, Plugin_GetInfo_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *pluginClient) Probe(ctx context.Context, in *ProbeRequest, opts ...grpc.CallOption) (*ProbeResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ProbeResponse)
	err := c.cc.Invoke(ctx, Plugin_Probe_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PluginServer is the server API for Plugin service.
// All implementations must embed UnimplementedPluginServer
// for forward compatibility.
//
// Plugin describes the binary and probes files.
type PluginServer interface {
	GetInfo(context.Context, *GetInfoRequest) (*GetInfoResponse, error)
	Probe(context.Context, *ProbeRequest) (*ProbeResponse, error)
	mustEmbedUnimplementedPluginServer()
}

// UnimplementedPluginServer must be embedded to have
// forward compatible implementations.
//
// NOTE: this should be embedded by value instead of pointer to avoid a nil
// pointer dereference when methods are called.
type UnimplementedPluginServer struct{}

func (UnimplementedPluginServer) GetInfo(context.Context, *GetInfoRequest) (*GetInfoResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method GetInfo not implemented")
}
func (UnimplementedPluginServer) Probe(context.Context, *ProbeRequest) (*ProbeResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Probe not implemented")
}
func (UnimplementedPluginServer) mustEmbedUnimplementedPluginServer() {}
func (UnimplementedPluginServer) testEmbeddedByValue()                {}

// UnsafePluginServer may be embedded to opt out of forward compatibility for this service.
// Use of this interface is not recommended, as added methods to PluginServer will
// result in compilation errors.
type UnsafePluginServer interface {
	mustEmbedUnimplementedPluginServer()
}

func RegisterPluginServer(s grpc.ServiceRegistrar, srv PluginServer) {
	// If the following call panics, it indicates UnimplementedPluginServer was
	// embedded by pointer and is nil.  This will cause panics if an
	// unimplemented method is ever invoked, so we test this at initialization
	// time to prevent it from happening at runtime later due to I/O.
	if t, ok := srv.(interface{ testEmbeddedByValue() }); ok {
		t.testEmbeddedByValue()
	}
	s.RegisterService(&Plugin_ServiceDesc, srv)
}

func _Plugin_GetInfo_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(GetInfoRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(PluginServer).GetInfo(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Plugin_GetInfo_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(PluginServer).GetInfo(ctx, req.(*GetInfoRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Plugin_Probe_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ProbeRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(PluginServer).Probe(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Plugin_Probe_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(PluginServer).Probe(ctx, req.(*ProbeRequest))
	}
	return interceptor(ctx, in, info, handler)
}

// Plugin_ServiceDesc is the grpc.ServiceDesc for Plugin service.
// It's only intended for direct use with grpc.RegisterService,
// and not to be introspected or modified (even as a copy)
var Plugin_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "sluice.plugin.v1.Plugin",
	HandlerType: (*PluginServer)(nil),
	Methods: []grpc.MethodDesc{
		{
			MethodName: "GetInfo",
			Handler:    _Plugin_GetInfo_Handler,
		},
		{
			MethodName: "Probe",
			Handler:    _Plugin_Probe_Handler,
		},
	},
	Streams:  []grpc.StreamDesc{},
	Metadata: "sluice_plugin_1.10.proto",
}

const (
	Source_Open_FullMethodName     = "/sluice.plugin.v1.Source/Open"
	Source_Describe_FullMethodName = "/sluice.plugin.v1.Source/Describe"
	Source_Read_FullMethodName     = "/sluice.plugin.v1.Source/Read"
	Source_Close_FullMethodName    = "/sluice.plugin.v1.Source/Close"
)

// SourceClient is the client API for Source service.
//
// For semantics around ctx use and closing/ending streaming RPCs, please refer to https://pkg.go.dev/google.golang.org/grpc/?tab=doc#ClientConn.NewStream.
//
// Source reads checkpoints.
type SourceClient interface {
	Open(ctx context.Context, in *OpenRequest, opts ...grpc.CallOption) (*OpenResponse, error)
	Describe(ctx context.Context, in *SessionRequest, opts ...grpc.CallOption) (*DescribeResponse, error)
	// Read streams one tensor. The host's first message is a ReadStart; the
	// following ones grant arena slots for the plugin to fill.
	Read(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[ReadRequest, Chunk], error)
	Close(ctx context.Context, in *SessionRequest, opts ...grpc.CallOption) (*Empty, error)
}

type sourceClient struct {
	cc grpc.ClientConnInterface
}

func NewSourceClient(cc grpc.ClientConnInterface) SourceClient {
	return &sourceClient{cc}
}

func (c *sourceClient) Open(ctx context.Context, in *OpenRequest, opts ...grpc.CallOption) (*OpenResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(OpenResponse)
	err := c.cc.Invoke(ctx, Source_Open_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *sourceClient) Describe(ctx context.Context, in *SessionRequest, opts ...grpc.CallOption) (*DescribeResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(DescribeResponse)
	err := c.cc.Invoke(ctx, Source_Describe_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *sourceClient) Read(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[ReadRequest, Chunk], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Source_ServiceDesc.Streams[0], Source_Read_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[ReadRequest, Chunk]{ClientStream: stream}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Source_ReadClient = grpc.BidiStreamingClient[ReadRequest, Chunk]

func (c *sourceClient) Close(ctx context.Context, in *SessionRequest, opts ...grpc.CallOption) (*Empty, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(Empty)
	err := c.cc.Invoke(ctx, Source_Close_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SourceServer is the server API for Source service.
// All implementations must embed UnimplementedSourceServer
// for forward compatibility.
//
// Source reads checkpoints.
type SourceServer interface {
	Open(context.Context, *OpenRequest) (*OpenResponse, error)
	Describe(context.Context, *SessionRequest) (*DescribeResponse, error)
	// Read streams one tensor. The host's first message is a ReadStart; the
	// following ones grant arena slots for the plugin to fill.
	Read(grpc.BidiStreamingServer[ReadRequest, Chunk]) error
	Close(context.Context, *SessionRequest) (*Empty, error)
	mustEmbedUnimplementedSourceServer()
}

// UnimplementedSourceServer must be embedded to have
// forward compatible implementations.
//
// NOTE: this should be embedded by value instead of pointer to avoid a nil
// pointer dereference when methods are called.
type UnimplementedSourceServer struct{}

func (UnimplementedSourceServer) Open(context.Context, *OpenRequest) (*OpenResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Open not implemented")
}
func (UnimplementedSourceServer) Describe(context.Context, *SessionRequest) (*DescribeResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Describe not implemented")
}
func (UnimplementedSourceServer) Read(grpc.BidiStreamingServer[ReadRequest, Chunk]) error {
	return status.Error(codes.Unimplemented, "method Read not implemented")
}
func (UnimplementedSourceServer) Close(context.Context, *SessionRequest) (*Empty, error) {
	return nil, status.Error(codes.Unimplemented, "method Close not implemented")
}
func (UnimplementedSourceServer) mustEmbedUnimplementedSourceServer() {}
func (UnimplementedSourceServer) testEmbeddedByValue()                {}

// UnsafeSourceServer may be embedded to opt out of forward compatibility for this service.
// Use of this interface is not recommended, as added methods to SourceServer will
// result in compilation errors.
type UnsafeSourceServer interface {
	mustEmbedUnimplementedSourceServer()
}

func RegisterSourceServer(s grpc.ServiceRegistrar, srv SourceServer) {
	// If the following call panics, it indicates UnimplementedSourceServer was
	// embedded by pointer and is nil.  This will cause panics if an
	// unimplemented method is ever invoked, so we test this at initialization
	// time to prevent it from happening at runtime later due to I/O.
	if t, ok := srv.(interface{ testEmbeddedByValue() }); ok {
		t.testEmbeddedByValue()
	}
	s.RegisterService(&Source_ServiceDesc, srv)
}

func _Source_Open_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(OpenRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(SourceServer).Open(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Source_Open_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(SourceServer).Open(ctx, req.(*OpenRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Source_Describe_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(SessionRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(SourceServer).Describe(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Source_Describe_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(SourceServer).Describe(ctx, req.(*SessionRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Source_Read_Handler(srv interface{}, stream grpc.ServerStream) error {
	return srv.(SourceServer).Read(&grpc.GenericServerStream[ReadRequest, Chunk]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Source_ReadServer = grpc.BidiStreamingServer[ReadRequest, Chunk]

func _Source_Close_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(SessionRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(SourceServer).Close(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Source_Close_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(SourceServer).Close(ctx, req.(*SessionRequest))
	}
	return interceptor(ctx, in, info, handler)
}

// Source_ServiceDesc is the grpc.ServiceDesc for Source service.
// It's only intended for direct use with grpc.RegisterService,
// and not to be introspected or modified (even as a copy)
var Source_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "sluice.plugin.v1.Source",
	HandlerType: (*SourceServer)(nil),
	Methods: []grpc.MethodDesc{
		{
			MethodName: "Open",
			Handler:    _Source_Open_Handler,
		},
		{
			MethodName: "Describe",
			Handler:    _Source_Describe_Handler,
		},
		{
			MethodName: "Close",
			Handler:    _Source_Close_Handler,
		},
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName:    "Read",
			Handler:       _Source_Read_Handler,
			ServerStreams: true,
			ClientStreams: true,
		},
	},
	Metadata: "sluice_plugin_1.10.proto",
}

const (
	Sink_Open_FullMethodName        = "/sluice.plugin.v1.Sink/Open"
	Sink_Plan_FullMethodName        = "/sluice.plugin.v1.Sink/Plan"
	Sink_Begin_FullMethodName       = "/sluice.plugin.v1.Sink/Begin"
	Sink_Write_FullMethodName       = "/sluice.plugin.v1.Sink/Write"
	Sink_WriteSeries_FullMethodName = "/sluice.plugin.v1.Sink/WriteSeries"
	Sink_Commit_FullMethodName      = "/sluice.plugin.v1.Sink/Commit"
	Sink_Abort_FullMethodName       = "/sluice.plugin.v1.Sink/Abort"
)

// SinkClient is the client API for Sink service.
//
// For semantics around ctx use and closing/ending streaming RPCs, please refer to https://pkg.go.dev/google.golang.org/grpc/?tab=doc#ClientConn.NewStream.
//
// Sink writes checkpoints.
type SinkClient interface {
	Open(ctx context.Context, in *OpenRequest, opts ...grpc.CallOption) (*OpenResponse, error)
	Plan(ctx context.Context, in *PlanRequest, opts ...grpc.CallOption) (*PlanResponse, error)
	Begin(ctx context.Context, in *BeginRequest, opts ...grpc.CallOption) (*Empty, error)
	// Write streams one tensor: a WriteStart, then Chunks unless the start
	// carries a file reference. The plugin acknowledges every arena chunk once
	// it no longer needs the slot, and ends with a WriteAck with done = true.
	Write(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[WriteRequest, WriteAck], error)
	// WriteSeries (1.3) carries the writes of any number of tensors, one after
	// another, each as Write carries one: a WriteStart, then Chunks unless the
	// start carries a file reference, the last chunk marked last (a tensor of
	// 0 bytes has none); the plugin acknowledges slots as in Write and ends
	// each tensor with a WriteAck with done = true, after which the host may
	// send the next WriteStart. Instead of a WriteStart the host may send
	// WriteFiles: tensors whose bytes all lie in files (or, since 1.4, in one
	// chunk each), which the plugin writes in order and confirms with one
	// WriteAck with done = true and written = their number. The plugin ends the stream with an error when a tensor
	// fails (after a WriteAck saying how many of a WriteFiles' tensors before
	// it were written; the host then opens another stream for the rest), and
	// with OK when the host closes its side between tensors.
	WriteSeries(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[WriteRequest, WriteAck], error)
	Commit(ctx context.Context, in *SessionRequest, opts ...grpc.CallOption) (*CommitResponse, error)
	Abort(ctx context.Context, in *SessionRequest, opts ...grpc.CallOption) (*Empty, error)
}

type sinkClient struct {
	cc grpc.ClientConnInterface
}

func NewSinkClient(cc grpc.ClientConnInterface) SinkClient {
	return &sinkClient{cc}
}

func (c *sinkClient) Open(ctx context.Context, in *OpenRequest, opts ...grpc.CallOption) (*OpenResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(OpenResponse)
	err := c.cc.Invoke(ctx, Sink_Open_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *sinkClient) Plan(ctx context.Context, in *PlanRequest, opts ...grpc.CallOption) (*PlanResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(PlanResponse)
	err := c.cc.Invoke(ctx, Sink_Plan_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *sinkClient) Begin(ctx context.Context, in *BeginRequest, opts ...grpc.CallOption) (*Empty, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(Empty)
	err := c.cc.Invoke(ctx, Sink_Begin_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *sinkClient) Write(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[WriteRequest, WriteAck], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Sink_ServiceDesc.Streams[0], Sink_Write_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[WriteRequest, WriteAck]{ClientStream: stream}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Sink_WriteClient = grpc.BidiStreamingClient[WriteRequest, WriteAck]

func (c *sinkClient) WriteSeries(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[WriteRequest, WriteAck], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Sink_ServiceDesc.Streams[1], Sink_WriteSeries_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[WriteRequest, WriteAck]{ClientStream: stream}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Sink_WriteSeriesClient = grpc.BidiStreamingClient[WriteRequest, WriteAck]

func (c *sinkClient) Commit(ctx context.Context, in *SessionRequest, opts ...grpc.CallOption) (*CommitResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(CommitResponse)
	err := c.cc.Invoke(ctx, Sink_Commit_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *sinkClient) Abort(ctx context.Context, in *SessionRequest, opts ...grpc.CallOption) (*Empty, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(Empty)
	err := c.cc.Invoke(ctx, Sink_Abort_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SinkServer is the server API for Sink service.
// All implementations must embed UnimplementedSinkServer
// for forward compatibility.
//
// Sink writes checkpoints.
type SinkServer interface {
	Open(context.Context, *OpenRequest) (*OpenResponse, error)
	Plan(context.Context, *PlanRequest) (*PlanResponse, error)
	Begin(context.Context, *BeginRequest) (*Empty, error)
	// Write streams one tensor: a WriteStart, then Chunks unless the start
	// carries a file reference. The plugin acknowledges every arena chunk once
	// it no longer needs the slot, and ends with a WriteAck with done = true.
	Write(grpc.BidiStreamingServer[WriteRequest, WriteAck]) error
	// WriteSeries (1.3) carries the writes of any number of tensors, one after
	// another, each as Write carries one: a WriteStart, then Chunks unless the
	// start carries a file reference, the last chunk marked last (a tensor of
	// 0 bytes has none); the plugin acknowledges slots as in Write and ends
	// each tensor with a WriteAck with done = true, after which the host may
	// send the next WriteStart. Instead of a WriteStart the host may send
	// WriteFiles: tensors whose bytes all lie in files (or, since 1.4, in one
	// chunk each), which the plugin writes in order and confirms with one
	// WriteAck with done = true and written = their number. The plugin ends the stream with an error when a tensor
	// fails (after a WriteAck saying how many of a WriteFiles' tensors before
	// it were written; the host then opens another stream for the rest), and
	// with OK when the host closes its side between tensors.
	WriteSeries(grpc.BidiStreamingServer[WriteRequest, WriteAck]) error
	Commit(context.Context, *SessionRequest) (*CommitResponse, error)
	Abort(context.Context, *SessionRequest) (*Empty, error)
	mustEmbedUnimplementedSinkServer()
}

// UnimplementedSinkServer must be embedded to have
// forward compatible implementations.
//
// NOTE: this should be embedded by value instead of pointer to avoid a nil
// pointer dereference when methods are called.
type UnimplementedSinkServer struct{}

func (UnimplementedSinkServer) Open(context.Context, *OpenRequest) (*OpenResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Open not implemented")
}
func (UnimplementedSinkServer) Plan(context.Context, *PlanRequest) (*PlanResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Plan not implemented")
}
func (UnimplementedSinkServer) Begin(context.Context, *BeginRequest) (*Empty, error) {
	return nil, status.Error(codes.Unimplemented, "method Begin not implemented")
}
func (UnimplementedSinkServer) Write(grpc.BidiStreamingServer[WriteRequest, WriteAck]) error {
	return status.Error(codes.Unimplemented, "method Write not implemented")
}
func (UnimplementedSinkServer) WriteSeries(grpc.BidiStreamingServer[WriteRequest, WriteAck]) error {
	return status.Error(codes.Unimplemented, "method WriteSeries not implemented")
}
func (UnimplementedSinkServer) Commit(context.Context, *SessionRequest) (*CommitResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Commit not implemented")
}
func (UnimplementedSinkServer) Abort(context.Context, *SessionRequest) (*Empty, error) {
	return nil, status.Error(codes.Unimplemented, "method Abort not implemented")
}
func (UnimplementedSinkServer) mustEmbedUnimplementedSinkServer() {}
func (UnimplementedSinkServer) testEmbeddedByValue()              {}

// UnsafeSinkServer may be embedded to opt out of forward compatibility for this service.
// Use of this interface is not recommended, as added methods to SinkServer will
// result in compilation errors.
type UnsafeSinkServer interface {
	mustEmbedUnimplementedSinkServer()
}

func RegisterSinkServer(s grpc.ServiceRegistrar, srv SinkServer) {
	// If the following call panics, it indicates UnimplementedSinkServer was
	// embedded by pointer and is nil.  This will cause panics if an
	// unimplemented method is ever invoked, so we test this at initialization
	// time to prevent it from happening at runtime later due to I/O.
	if t, ok := srv.(interface{ testEmbeddedByValue() }); ok {
		t.testEmbeddedByValue()
	}
	s.RegisterService(&Sink_ServiceDesc, srv)
}

func _Sink_Open_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(OpenRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(SinkServer).Open(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Sink_Open_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(SinkServer).Open(ctx, req.(*OpenRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Sink_Plan_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(PlanRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(SinkServer).Plan(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Sink_Plan_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(SinkServer).Plan(ctx, req.(*PlanRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Sink_Begin_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(BeginRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(SinkServer).Begin(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Sink_Begin_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(SinkServer).Begin(ctx, req.(*BeginRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Sink_Write_Handler(srv interface{}, stream grpc.ServerStream) error {
	return srv.(SinkServer).Write(&grpc.GenericServerStream[WriteRequest, WriteAck]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Sink_WriteServer = grpc.BidiStreamingServer[WriteRequest, WriteAck]

func _Sink_WriteSeries_Handler(srv interface{}, stream grpc.ServerStream) error {
	return srv.(SinkServer).WriteSeries(&grpc.GenericServerStream[WriteRequest, WriteAck]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Sink_WriteSeriesServer = grpc.BidiStreamingServer[WriteRequest, WriteAck]

func _Sink_Commit_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(SessionRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(SinkServer).Commit(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Sink_Commit_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(SinkServer).Commit(ctx, req.(*SessionRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Sink_Abort_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(SessionRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(SinkServer).Abort(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Sink_Abort_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(SinkServer).Abort(ctx, req.(*SessionRequest))
	}
	return interceptor(ctx, in, info, handler)
}

// Sink_ServiceDesc is the grpc.ServiceDesc for Sink service.
// It's only intended for direct use with grpc.RegisterService,
// and not to be introspected or modified (even as a copy)
var Sink_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "sluice.plugin.v1.Sink",
	HandlerType: (*SinkServer)(nil),
	Methods: []grpc.MethodDesc{
		{
			MethodName: "Open",
			Handler:    _Sink_Open_Handler,
		},
		{
			MethodName: "Plan",
			Handler:    _Sink_Plan_Handler,
		},
		{
			MethodName: "Begin",
			Handler:    _Sink_Begin_Handler,
		},
		{
			MethodName: "Commit",
			Handler:    _Sink_Commit_Handler,
		},
		{
			MethodName: "Abort",
			Handler:    _Sink_Abort_Handler,
		},
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName:    "Write",
			Handler:       _Sink_Write_Handler,
			ServerStreams: true,
			ClientStreams: true,
		},
		{
			StreamName:    "WriteSeries",
			Handler:       _Sink_WriteSeries_Handler,
			ServerStreams: true,
			ClientStreams: true,
		},
	},
	Metadata: "sluice_plugin_1.10.proto",
}
