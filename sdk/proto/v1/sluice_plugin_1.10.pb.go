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

// Code generated by protoc-gen-go. DO NOT EDIT.
// versions:
// 	protoc-gen-go v1.36.12
// 	protoc        v3.21.12
// source: sluice_plugin_1.10.proto

package pluginv1

import (
	protoreflect "google.golang.org/protobuf/reflect/protoreflect"
	protoimpl "google.golang.org/protobuf/runtime/protoimpl"
	reflect "reflect"
	sync "sync"
	unsafe "unsafe"
)

const (
	// Verify that this generated code is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(20 - protoimpl.MinVersion)
	// Verify that runtime/protoimpl is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(protoimpl.MaxVersion - 20)
)

type Component_Kind int32

const (
	Component_KIND_UNSPECIFIED Component_Kind = 0
	Component_SOURCE           Component_Kind = 1
	Component_SINK             Component_Kind = 2
)

// Enum value maps for Component_Kind.
var (
	Component_Kind_name = map[int32]string{
		0: "KIND_UNSPECIFIED",
		1: "SOURCE",
		2: "SINK",
	}
	Component_Kind_value = map[string]int32{
		"KIND_UNSPECIFIED": 0,
		"SOURCE":           1,
		"SINK":             2,
	}
)

func (x Component_Kind) Enum() *Component_Kind {
	p := new(Component_Kind)
	*p = x
	return p
}

func (x Component_Kind) String() string {
	return protoimpl.X.EnumStringOf(x.Descriptor(), protoreflect.EnumNumber(x))
}

func (Component_Kind) Descriptor() protoreflect.EnumDescriptor {
	return file_sluice_plugin_1_10_proto_enumTypes[0].Descriptor()
}

func (Component_Kind) Type() protoreflect.EnumType {
	return &file_sluice_plugin_1_10_proto_enumTypes[0]
}

func (x Component_Kind) Number() protoreflect.EnumNumber {
	return protoreflect.EnumNumber(x)
}

// Deprecated: Use Component_Kind.Descriptor instead.
func (Component_Kind) EnumDescriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{4, 0}
}

type Empty struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Empty) Reset() {
	*x = Empty{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[0]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Empty) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Empty) ProtoMessage() {}

func (x *Empty) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[0]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Empty.ProtoReflect.Descriptor instead.
func (*Empty) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{0}
}

// Capabilities are announced by both sides; the host picks a delivery mode
// per edge from them.
type Capabilities struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// arena: the plugin mapped the shared arena it was given.
	Arena bool `protobuf:"varint,1,opt,name=arena,proto3" json:"arena,omitempty"`
	// file_ref: the plugin can read and take file references.
	FileRef bool `protobuf:"varint,2,opt,name=file_ref,json=fileRef,proto3" json:"file_ref,omitempty"`
	// max_inline: the largest inline chunk the plugin accepts.
	MaxInline uint32 `protobuf:"varint,3,opt,name=max_inline,json=maxInline,proto3" json:"max_inline,omitempty"`
	// write_series (1.3): the plugin serves Sink.WriteSeries.
	WriteSeries bool `protobuf:"varint,4,opt,name=write_series,json=writeSeries,proto3" json:"write_series,omitempty"`
	// write_data (1.4): the plugin takes WriteStart.data in a WriteFiles.
	WriteData bool `protobuf:"varint,5,opt,name=write_data,json=writeData,proto3" json:"write_data,omitempty"`
	// packed_strings (1.5): the plugin takes Value.packed_strs in the
	// manifests the host sends.
	PackedStrings bool `protobuf:"varint,6,opt,name=packed_strings,json=packedStrings,proto3" json:"packed_strings,omitempty"`
	// write_lanes (1.6): the plugin serves WriteSeries over the write lanes
	// the host opens through the lane socket it passed at spawn. A plugin
	// announces it only when it was given such a socket.
	WriteLanes bool `protobuf:"varint,7,opt,name=write_lanes,json=writeLanes,proto3" json:"write_lanes,omitempty"`
	// direct_writes (1.7): the plugin serves direct lanes (see above) over
	// the lane socket. A plugin announces it only with write_lanes.
	DirectWrites bool `protobuf:"varint,8,opt,name=direct_writes,json=directWrites,proto3" json:"direct_writes,omitempty"`
	// packed_tensors (1.8): the plugin takes Manifest.packed_tensors in the
	// manifests the host sends (Plan, Begin).
	PackedTensors bool `protobuf:"varint,9,opt,name=packed_tensors,json=packedTensors,proto3" json:"packed_tensors,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Capabilities) Reset() {
	*x = Capabilities{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[1]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Capabilities) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Capabilities) ProtoMessage() {}

func (x *Capabilities) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[1]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Capabilities.ProtoReflect.Descriptor instead.
func (*Capabilities) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{1}
}

func (x *Capabilities) GetArena() bool {
	if x != nil {
		return x.Arena
	}
	return false
}

func (x *Capabilities) GetFileRef() bool {
	if x != nil {
		return x.FileRef
	}
	return false
}

func (x *Capabilities) GetMaxInline() uint32 {
	if x != nil {
		return x.MaxInline
	}
	return 0
}

func (x *Capabilities) GetWriteSeries() bool {
	if x != nil {
		return x.WriteSeries
	}
	return false
}

func (x *Capabilities) GetWriteData() bool {
	if x != nil {
		return x.WriteData
	}
	return false
}

func (x *Capabilities) GetPackedStrings() bool {
	if x != nil {
		return x.PackedStrings
	}
	return false
}

func (x *Capabilities) GetWriteLanes() bool {
	if x != nil {
		return x.WriteLanes
	}
	return false
}

func (x *Capabilities) GetDirectWrites() bool {
	if x != nil {
		return x.DirectWrites
	}
	return false
}

func (x *Capabilities) GetPackedTensors() bool {
	if x != nil {
		return x.PackedTensors
	}
	return false
}

type GetInfoRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// host_protocol_minor is the newest minor of v1 the host speaks.
	HostProtocolMinor uint32 `protobuf:"varint,1,opt,name=host_protocol_minor,json=hostProtocolMinor,proto3" json:"host_protocol_minor,omitempty"`
	// host_packed_strings (1.5): the host takes Value.packed_strs in the
	// manifests the plugin sends.
	HostPackedStrings bool `protobuf:"varint,2,opt,name=host_packed_strings,json=hostPackedStrings,proto3" json:"host_packed_strings,omitempty"`
	// host_packed_tensors (1.8): the host takes Manifest.packed_tensors in
	// the manifests the plugin sends, PlanResponse.packed_convert and
	// DirectTargets.packed_tensors.
	HostPackedTensors bool `protobuf:"varint,3,opt,name=host_packed_tensors,json=hostPackedTensors,proto3" json:"host_packed_tensors,omitempty"`
	// host_digests (1.9): the host computes the SHA-256 of the files a sink
	// hands over on a direct lane with DirectHashTo frames.
	HostDigests   bool `protobuf:"varint,4,opt,name=host_digests,json=hostDigests,proto3" json:"host_digests,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *GetInfoRequest) Reset() {
	*x = GetInfoRequest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[2]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *GetInfoRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*GetInfoRequest) ProtoMessage() {}

func (x *GetInfoRequest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[2]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use GetInfoRequest.ProtoReflect.Descriptor instead.
func (*GetInfoRequest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{2}
}

func (x *GetInfoRequest) GetHostProtocolMinor() uint32 {
	if x != nil {
		return x.HostProtocolMinor
	}
	return 0
}

func (x *GetInfoRequest) GetHostPackedStrings() bool {
	if x != nil {
		return x.HostPackedStrings
	}
	return false
}

func (x *GetInfoRequest) GetHostPackedTensors() bool {
	if x != nil {
		return x.HostPackedTensors
	}
	return false
}

func (x *GetInfoRequest) GetHostDigests() bool {
	if x != nil {
		return x.HostDigests
	}
	return false
}

type GetInfoResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Name          string                 `protobuf:"bytes,1,opt,name=name,proto3" json:"name,omitempty"`
	Version       string                 `protobuf:"bytes,2,opt,name=version,proto3" json:"version,omitempty"`
	ProtocolMinor uint32                 `protobuf:"varint,3,opt,name=protocol_minor,json=protocolMinor,proto3" json:"protocol_minor,omitempty"`
	Components    []*Component           `protobuf:"bytes,4,rep,name=components,proto3" json:"components,omitempty"`
	Capabilities  *Capabilities          `protobuf:"bytes,5,opt,name=capabilities,proto3" json:"capabilities,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *GetInfoResponse) Reset() {
	*x = GetInfoResponse{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[3]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *GetInfoResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*GetInfoResponse) ProtoMessage() {}

func (x *GetInfoResponse) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[3]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use GetInfoResponse.ProtoReflect.Descriptor instead.
func (*GetInfoResponse) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{3}
}

func (x *GetInfoResponse) GetName() string {
	if x != nil {
		return x.Name
	}
	return ""
}

func (x *GetInfoResponse) GetVersion() string {
	if x != nil {
		return x.Version
	}
	return ""
}

func (x *GetInfoResponse) GetProtocolMinor() uint32 {
	if x != nil {
		return x.ProtocolMinor
	}
	return 0
}

func (x *GetInfoResponse) GetComponents() []*Component {
	if x != nil {
		return x.Components
	}
	return nil
}

func (x *GetInfoResponse) GetCapabilities() *Capabilities {
	if x != nil {
		return x.Capabilities
	}
	return nil
}

type Component struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Kind          Component_Kind         `protobuf:"varint,1,opt,name=kind,proto3,enum=sluice.plugin.v1.Component_Kind" json:"kind,omitempty"`
	Name          string                 `protobuf:"bytes,2,opt,name=name,proto3" json:"name,omitempty"`
	Doc           string                 `protobuf:"bytes,3,opt,name=doc,proto3" json:"doc,omitempty"`
	Schema        *Schema                `protobuf:"bytes,4,opt,name=schema,proto3" json:"schema,omitempty"`
	Extensions    []string               `protobuf:"bytes,5,rep,name=extensions,proto3" json:"extensions,omitempty"`
	Probes        bool                   `protobuf:"varint,6,opt,name=probes,proto3" json:"probes,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Component) Reset() {
	*x = Component{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[4]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Component) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Component) ProtoMessage() {}

func (x *Component) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[4]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Component.ProtoReflect.Descriptor instead.
func (*Component) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{4}
}

func (x *Component) GetKind() Component_Kind {
	if x != nil {
		return x.Kind
	}
	return Component_KIND_UNSPECIFIED
}

func (x *Component) GetName() string {
	if x != nil {
		return x.Name
	}
	return ""
}

func (x *Component) GetDoc() string {
	if x != nil {
		return x.Doc
	}
	return ""
}

func (x *Component) GetSchema() *Schema {
	if x != nil {
		return x.Schema
	}
	return nil
}

func (x *Component) GetExtensions() []string {
	if x != nil {
		return x.Extensions
	}
	return nil
}

func (x *Component) GetProbes() bool {
	if x != nil {
		return x.Probes
	}
	return false
}

type Schema struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Attributes    []*Attribute           `protobuf:"bytes,1,rep,name=attributes,proto3" json:"attributes,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Schema) Reset() {
	*x = Schema{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[5]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Schema) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Schema) ProtoMessage() {}

func (x *Schema) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[5]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Schema.ProtoReflect.Descriptor instead.
func (*Schema) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{5}
}

func (x *Schema) GetAttributes() []*Attribute {
	if x != nil {
		return x.Attributes
	}
	return nil
}

type Attribute struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Name  string                 `protobuf:"bytes,1,opt,name=name,proto3" json:"name,omitempty"`
	// type is an HCL type constraint: "string", "list(string)", "map(number)".
	Type          string `protobuf:"bytes,2,opt,name=type,proto3" json:"type,omitempty"`
	Required      bool   `protobuf:"varint,3,opt,name=required,proto3" json:"required,omitempty"`
	Sensitive     bool   `protobuf:"varint,4,opt,name=sensitive,proto3" json:"sensitive,omitempty"`
	Doc           string `protobuf:"bytes,5,opt,name=doc,proto3" json:"doc,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Attribute) Reset() {
	*x = Attribute{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[6]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Attribute) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Attribute) ProtoMessage() {}

func (x *Attribute) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[6]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Attribute.ProtoReflect.Descriptor instead.
func (*Attribute) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{6}
}

func (x *Attribute) GetName() string {
	if x != nil {
		return x.Name
	}
	return ""
}

func (x *Attribute) GetType() string {
	if x != nil {
		return x.Type
	}
	return ""
}

func (x *Attribute) GetRequired() bool {
	if x != nil {
		return x.Required
	}
	return false
}

func (x *Attribute) GetSensitive() bool {
	if x != nil {
		return x.Sensitive
	}
	return false
}

func (x *Attribute) GetDoc() string {
	if x != nil {
		return x.Doc
	}
	return ""
}

type ProbeRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Component     string                 `protobuf:"bytes,1,opt,name=component,proto3" json:"component,omitempty"`
	Path          string                 `protobuf:"bytes,2,opt,name=path,proto3" json:"path,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ProbeRequest) Reset() {
	*x = ProbeRequest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[7]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ProbeRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ProbeRequest) ProtoMessage() {}

func (x *ProbeRequest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[7]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ProbeRequest.ProtoReflect.Descriptor instead.
func (*ProbeRequest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{7}
}

func (x *ProbeRequest) GetComponent() string {
	if x != nil {
		return x.Component
	}
	return ""
}

func (x *ProbeRequest) GetPath() string {
	if x != nil {
		return x.Path
	}
	return ""
}

type ProbeResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// score from 0 (cannot read) to 100 (certain).
	Score         int32 `protobuf:"varint,1,opt,name=score,proto3" json:"score,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ProbeResponse) Reset() {
	*x = ProbeResponse{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[8]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ProbeResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ProbeResponse) ProtoMessage() {}

func (x *ProbeResponse) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[8]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ProbeResponse.ProtoReflect.Descriptor instead.
func (*ProbeResponse) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{8}
}

func (x *ProbeResponse) GetScore() int32 {
	if x != nil {
		return x.Score
	}
	return 0
}

type OpenRequest struct {
	state     protoimpl.MessageState `protogen:"open.v1"`
	Component string                 `protobuf:"bytes,1,opt,name=component,proto3" json:"component,omitempty"`
	// config_json holds the block's attributes as constant values.
	ConfigJson    []byte `protobuf:"bytes,2,opt,name=config_json,json=configJson,proto3" json:"config_json,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *OpenRequest) Reset() {
	*x = OpenRequest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[9]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *OpenRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*OpenRequest) ProtoMessage() {}

func (x *OpenRequest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[9]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use OpenRequest.ProtoReflect.Descriptor instead.
func (*OpenRequest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{9}
}

func (x *OpenRequest) GetComponent() string {
	if x != nil {
		return x.Component
	}
	return ""
}

func (x *OpenRequest) GetConfigJson() []byte {
	if x != nil {
		return x.ConfigJson
	}
	return nil
}

type OpenResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Session       uint64                 `protobuf:"varint,1,opt,name=session,proto3" json:"session,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *OpenResponse) Reset() {
	*x = OpenResponse{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[10]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *OpenResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*OpenResponse) ProtoMessage() {}

func (x *OpenResponse) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[10]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use OpenResponse.ProtoReflect.Descriptor instead.
func (*OpenResponse) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{10}
}

func (x *OpenResponse) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

type SessionRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Session       uint64                 `protobuf:"varint,1,opt,name=session,proto3" json:"session,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SessionRequest) Reset() {
	*x = SessionRequest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[11]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SessionRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SessionRequest) ProtoMessage() {}

func (x *SessionRequest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[11]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SessionRequest.ProtoReflect.Descriptor instead.
func (*SessionRequest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{11}
}

func (x *SessionRequest) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

// Value is a typed metadata value; the numbering of ValueType is GGUF's.
type Value struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Type  uint32                 `protobuf:"varint,1,opt,name=type,proto3" json:"type,omitempty"`
	Elem  uint32                 `protobuf:"varint,2,opt,name=elem,proto3" json:"elem,omitempty"`
	Bits  uint64                 `protobuf:"fixed64,3,opt,name=bits,proto3" json:"bits,omitempty"`
	Str   string                 `protobuf:"bytes,4,opt,name=str,proto3" json:"str,omitempty"`
	Strs  []string               `protobuf:"bytes,5,rep,name=strs,proto3" json:"strs,omitempty"`
	Raw   []byte                 `protobuf:"bytes,6,opt,name=raw,proto3" json:"raw,omitempty"`
	Items []*Value               `protobuf:"bytes,7,rep,name=items,proto3" json:"items,omitempty"`
	// packed_strs (1.5): an array of strings (elem 8) in one block, in place
	// of strs, to a peer that announced it takes it.
	PackedStrs    *PackedStrings `protobuf:"bytes,8,opt,name=packed_strs,json=packedStrs,proto3" json:"packed_strs,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Value) Reset() {
	*x = Value{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[12]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Value) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Value) ProtoMessage() {}

func (x *Value) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[12]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Value.ProtoReflect.Descriptor instead.
func (*Value) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{12}
}

func (x *Value) GetType() uint32 {
	if x != nil {
		return x.Type
	}
	return 0
}

func (x *Value) GetElem() uint32 {
	if x != nil {
		return x.Elem
	}
	return 0
}

func (x *Value) GetBits() uint64 {
	if x != nil {
		return x.Bits
	}
	return 0
}

func (x *Value) GetStr() string {
	if x != nil {
		return x.Str
	}
	return ""
}

func (x *Value) GetStrs() []string {
	if x != nil {
		return x.Strs
	}
	return nil
}

func (x *Value) GetRaw() []byte {
	if x != nil {
		return x.Raw
	}
	return nil
}

func (x *Value) GetItems() []*Value {
	if x != nil {
		return x.Items
	}
	return nil
}

func (x *Value) GetPackedStrs() *PackedStrings {
	if x != nil {
		return x.PackedStrs
	}
	return nil
}

// PackedStrings is an array of count strings laid out as GGUF lays out a
// string array: each string a little-endian u64 byte length followed by its
// bytes, back to back, with nothing after the last. Every string is UTF-8,
// as a protobuf string is.
type PackedStrings struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Count         uint64                 `protobuf:"varint,1,opt,name=count,proto3" json:"count,omitempty"`
	Layout        []byte                 `protobuf:"bytes,2,opt,name=layout,proto3" json:"layout,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PackedStrings) Reset() {
	*x = PackedStrings{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[13]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PackedStrings) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PackedStrings) ProtoMessage() {}

func (x *PackedStrings) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[13]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PackedStrings.ProtoReflect.Descriptor instead.
func (*PackedStrings) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{13}
}

func (x *PackedStrings) GetCount() uint64 {
	if x != nil {
		return x.Count
	}
	return 0
}

func (x *PackedStrings) GetLayout() []byte {
	if x != nil {
		return x.Layout
	}
	return nil
}

type KeyValue struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Key           string                 `protobuf:"bytes,1,opt,name=key,proto3" json:"key,omitempty"`
	Value         *Value                 `protobuf:"bytes,2,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *KeyValue) Reset() {
	*x = KeyValue{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[14]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *KeyValue) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*KeyValue) ProtoMessage() {}

func (x *KeyValue) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[14]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use KeyValue.ProtoReflect.Descriptor instead.
func (*KeyValue) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{14}
}

func (x *KeyValue) GetKey() string {
	if x != nil {
		return x.Key
	}
	return ""
}

func (x *KeyValue) GetValue() *Value {
	if x != nil {
		return x.Value
	}
	return nil
}

type FileRef struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Path          string                 `protobuf:"bytes,1,opt,name=path,proto3" json:"path,omitempty"`
	Offset        uint64                 `protobuf:"varint,2,opt,name=offset,proto3" json:"offset,omitempty"`
	Length        uint64                 `protobuf:"varint,3,opt,name=length,proto3" json:"length,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *FileRef) Reset() {
	*x = FileRef{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[15]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *FileRef) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*FileRef) ProtoMessage() {}

func (x *FileRef) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[15]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use FileRef.ProtoReflect.Descriptor instead.
func (*FileRef) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{15}
}

func (x *FileRef) GetPath() string {
	if x != nil {
		return x.Path
	}
	return ""
}

func (x *FileRef) GetOffset() uint64 {
	if x != nil {
		return x.Offset
	}
	return 0
}

func (x *FileRef) GetLength() uint64 {
	if x != nil {
		return x.Length
	}
	return 0
}

type TensorInfo struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Name  string                 `protobuf:"bytes,1,opt,name=name,proto3" json:"name,omitempty"`
	Dtype string                 `protobuf:"bytes,2,opt,name=dtype,proto3" json:"dtype,omitempty"`
	// shape is row-major, outermost dimension first.
	Shape         []uint64          `protobuf:"varint,3,rep,packed,name=shape,proto3" json:"shape,omitempty"`
	Size          uint64            `protobuf:"varint,4,opt,name=size,proto3" json:"size,omitempty"`
	Attrs         map[string]string `protobuf:"bytes,5,rep,name=attrs,proto3" json:"attrs,omitempty" protobuf_key:"bytes,1,opt,name=key" protobuf_val:"bytes,2,opt,name=value"`
	Location      *FileRef          `protobuf:"bytes,6,opt,name=location,proto3" json:"location,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *TensorInfo) Reset() {
	*x = TensorInfo{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[16]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *TensorInfo) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*TensorInfo) ProtoMessage() {}

func (x *TensorInfo) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[16]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use TensorInfo.ProtoReflect.Descriptor instead.
func (*TensorInfo) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{16}
}

func (x *TensorInfo) GetName() string {
	if x != nil {
		return x.Name
	}
	return ""
}

func (x *TensorInfo) GetDtype() string {
	if x != nil {
		return x.Dtype
	}
	return ""
}

func (x *TensorInfo) GetShape() []uint64 {
	if x != nil {
		return x.Shape
	}
	return nil
}

func (x *TensorInfo) GetSize() uint64 {
	if x != nil {
		return x.Size
	}
	return 0
}

func (x *TensorInfo) GetAttrs() map[string]string {
	if x != nil {
		return x.Attrs
	}
	return nil
}

func (x *TensorInfo) GetLocation() *FileRef {
	if x != nil {
		return x.Location
	}
	return nil
}

type Manifest struct {
	state    protoimpl.MessageState `protogen:"open.v1"`
	Metadata []*KeyValue            `protobuf:"bytes,1,rep,name=metadata,proto3" json:"metadata,omitempty"`
	Tensors  []*TensorInfo          `protobuf:"bytes,2,rep,name=tensors,proto3" json:"tensors,omitempty"`
	// packed_tensors (1.8): the tensors as a packed tensor table, in place of
	// tensors; sent only to a peer that announced it takes one.
	PackedTensors []byte `protobuf:"bytes,3,opt,name=packed_tensors,json=packedTensors,proto3" json:"packed_tensors,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Manifest) Reset() {
	*x = Manifest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[17]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Manifest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Manifest) ProtoMessage() {}

func (x *Manifest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[17]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Manifest.ProtoReflect.Descriptor instead.
func (*Manifest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{17}
}

func (x *Manifest) GetMetadata() []*KeyValue {
	if x != nil {
		return x.Metadata
	}
	return nil
}

func (x *Manifest) GetTensors() []*TensorInfo {
	if x != nil {
		return x.Tensors
	}
	return nil
}

func (x *Manifest) GetPackedTensors() []byte {
	if x != nil {
		return x.PackedTensors
	}
	return nil
}

type DescribeResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Manifest      *Manifest              `protobuf:"bytes,1,opt,name=manifest,proto3" json:"manifest,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DescribeResponse) Reset() {
	*x = DescribeResponse{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[18]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DescribeResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DescribeResponse) ProtoMessage() {}

func (x *DescribeResponse) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[18]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DescribeResponse.ProtoReflect.Descriptor instead.
func (*DescribeResponse) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{18}
}

func (x *DescribeResponse) GetManifest() *Manifest {
	if x != nil {
		return x.Manifest
	}
	return nil
}

type ReadRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Msg:
	//
	//	*ReadRequest_Start
	//	*ReadRequest_Grant
	Msg           isReadRequest_Msg `protobuf_oneof:"msg"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadRequest) Reset() {
	*x = ReadRequest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[19]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadRequest) ProtoMessage() {}

func (x *ReadRequest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[19]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadRequest.ProtoReflect.Descriptor instead.
func (*ReadRequest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{19}
}

func (x *ReadRequest) GetMsg() isReadRequest_Msg {
	if x != nil {
		return x.Msg
	}
	return nil
}

func (x *ReadRequest) GetStart() *ReadStart {
	if x != nil {
		if x, ok := x.Msg.(*ReadRequest_Start); ok {
			return x.Start
		}
	}
	return nil
}

func (x *ReadRequest) GetGrant() *SlotGrant {
	if x != nil {
		if x, ok := x.Msg.(*ReadRequest_Grant); ok {
			return x.Grant
		}
	}
	return nil
}

type isReadRequest_Msg interface {
	isReadRequest_Msg()
}

type ReadRequest_Start struct {
	Start *ReadStart `protobuf:"bytes,1,opt,name=start,proto3,oneof"`
}

type ReadRequest_Grant struct {
	Grant *SlotGrant `protobuf:"bytes,2,opt,name=grant,proto3,oneof"`
}

func (*ReadRequest_Start) isReadRequest_Msg() {}

func (*ReadRequest_Grant) isReadRequest_Msg() {}

type ReadStart struct {
	state   protoimpl.MessageState `protogen:"open.v1"`
	Session uint64                 `protobuf:"varint,1,opt,name=session,proto3" json:"session,omitempty"`
	Tensor  string                 `protobuf:"bytes,2,opt,name=tensor,proto3" json:"tensor,omitempty"`
	// arena: fill granted slots; otherwise send inline chunks.
	Arena bool `protobuf:"varint,3,opt,name=arena,proto3" json:"arena,omitempty"`
	// align: every chunk but the last holds a multiple of align bytes, so
	// chunks never split a quantization block or a row group. 0 means 1.
	Align uint64 `protobuf:"varint,4,opt,name=align,proto3" json:"align,omitempty"`
	// max_chunk: no chunk holds more than max_chunk bytes (0: a slot, or the
	// inline limit).
	MaxChunk      uint64 `protobuf:"varint,5,opt,name=max_chunk,json=maxChunk,proto3" json:"max_chunk,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadStart) Reset() {
	*x = ReadStart{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[20]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadStart) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadStart) ProtoMessage() {}

func (x *ReadStart) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[20]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadStart.ProtoReflect.Descriptor instead.
func (*ReadStart) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{20}
}

func (x *ReadStart) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

func (x *ReadStart) GetTensor() string {
	if x != nil {
		return x.Tensor
	}
	return ""
}

func (x *ReadStart) GetArena() bool {
	if x != nil {
		return x.Arena
	}
	return false
}

func (x *ReadStart) GetAlign() uint64 {
	if x != nil {
		return x.Align
	}
	return 0
}

func (x *ReadStart) GetMaxChunk() uint64 {
	if x != nil {
		return x.MaxChunk
	}
	return 0
}

type SlotGrant struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Slots         []uint32               `protobuf:"varint,1,rep,packed,name=slots,proto3" json:"slots,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SlotGrant) Reset() {
	*x = SlotGrant{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[21]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SlotGrant) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SlotGrant) ProtoMessage() {}

func (x *SlotGrant) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[21]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SlotGrant.ProtoReflect.Descriptor instead.
func (*SlotGrant) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{21}
}

func (x *SlotGrant) GetSlots() []uint32 {
	if x != nil {
		return x.Slots
	}
	return nil
}

// Chunk carries bytes [offset, offset+length) of a tensor.
type Chunk struct {
	state  protoimpl.MessageState `protogen:"open.v1"`
	Offset uint64                 `protobuf:"varint,1,opt,name=offset,proto3" json:"offset,omitempty"`
	Length uint64                 `protobuf:"varint,2,opt,name=length,proto3" json:"length,omitempty"`
	// Types that are valid to be assigned to Payload:
	//
	//	*Chunk_Inline
	//	*Chunk_Slot
	Payload isChunk_Payload `protobuf_oneof:"payload"`
	Last    bool            `protobuf:"varint,5,opt,name=last,proto3" json:"last,omitempty"`
	// slot_offset (1.4), in WriteStart.data only: the data begins at this
	// byte of the slot rather than at its start (small tensors share a slot).
	SlotOffset    uint64 `protobuf:"varint,6,opt,name=slot_offset,json=slotOffset,proto3" json:"slot_offset,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Chunk) Reset() {
	*x = Chunk{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[22]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Chunk) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Chunk) ProtoMessage() {}

func (x *Chunk) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[22]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Chunk.ProtoReflect.Descriptor instead.
func (*Chunk) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{22}
}

func (x *Chunk) GetOffset() uint64 {
	if x != nil {
		return x.Offset
	}
	return 0
}

func (x *Chunk) GetLength() uint64 {
	if x != nil {
		return x.Length
	}
	return 0
}

func (x *Chunk) GetPayload() isChunk_Payload {
	if x != nil {
		return x.Payload
	}
	return nil
}

func (x *Chunk) GetInline() []byte {
	if x != nil {
		if x, ok := x.Payload.(*Chunk_Inline); ok {
			return x.Inline
		}
	}
	return nil
}

func (x *Chunk) GetSlot() uint32 {
	if x != nil {
		if x, ok := x.Payload.(*Chunk_Slot); ok {
			return x.Slot
		}
	}
	return 0
}

func (x *Chunk) GetLast() bool {
	if x != nil {
		return x.Last
	}
	return false
}

func (x *Chunk) GetSlotOffset() uint64 {
	if x != nil {
		return x.SlotOffset
	}
	return 0
}

type isChunk_Payload interface {
	isChunk_Payload()
}

type Chunk_Inline struct {
	Inline []byte `protobuf:"bytes,3,opt,name=inline,proto3,oneof"`
}

type Chunk_Slot struct {
	// slot is the index of an arena slot whose first length bytes hold the data.
	Slot uint32 `protobuf:"varint,4,opt,name=slot,proto3,oneof"`
}

func (*Chunk_Inline) isChunk_Payload() {}

func (*Chunk_Slot) isChunk_Payload() {}

type PlanRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Session       uint64                 `protobuf:"varint,1,opt,name=session,proto3" json:"session,omitempty"`
	Manifest      *Manifest              `protobuf:"bytes,2,opt,name=manifest,proto3" json:"manifest,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PlanRequest) Reset() {
	*x = PlanRequest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[23]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PlanRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PlanRequest) ProtoMessage() {}

func (x *PlanRequest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[23]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PlanRequest.ProtoReflect.Descriptor instead.
func (*PlanRequest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{23}
}

func (x *PlanRequest) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

func (x *PlanRequest) GetManifest() *Manifest {
	if x != nil {
		return x.Manifest
	}
	return nil
}

type Conversion struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Tensor        string                 `protobuf:"bytes,1,opt,name=tensor,proto3" json:"tensor,omitempty"`
	Dtype         string                 `protobuf:"bytes,2,opt,name=dtype,proto3" json:"dtype,omitempty"`
	Reason        string                 `protobuf:"bytes,3,opt,name=reason,proto3" json:"reason,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Conversion) Reset() {
	*x = Conversion{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[24]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Conversion) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Conversion) ProtoMessage() {}

func (x *Conversion) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[24]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Conversion.ProtoReflect.Descriptor instead.
func (*Conversion) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{24}
}

func (x *Conversion) GetTensor() string {
	if x != nil {
		return x.Tensor
	}
	return ""
}

func (x *Conversion) GetDtype() string {
	if x != nil {
		return x.Dtype
	}
	return ""
}

func (x *Conversion) GetReason() string {
	if x != nil {
		return x.Reason
	}
	return ""
}

type Decision struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Tensor        string                 `protobuf:"bytes,1,opt,name=tensor,proto3" json:"tensor,omitempty"`
	Msg           string                 `protobuf:"bytes,2,opt,name=msg,proto3" json:"msg,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Decision) Reset() {
	*x = Decision{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[25]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Decision) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Decision) ProtoMessage() {}

func (x *Decision) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[25]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Decision.ProtoReflect.Descriptor instead.
func (*Decision) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{25}
}

func (x *Decision) GetTensor() string {
	if x != nil {
		return x.Tensor
	}
	return ""
}

func (x *Decision) GetMsg() string {
	if x != nil {
		return x.Msg
	}
	return ""
}

type PlannedFile struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Path          string                 `protobuf:"bytes,1,opt,name=path,proto3" json:"path,omitempty"`
	Size          uint64                 `protobuf:"varint,2,opt,name=size,proto3" json:"size,omitempty"`
	Tensors       uint32                 `protobuf:"varint,3,opt,name=tensors,proto3" json:"tensors,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PlannedFile) Reset() {
	*x = PlannedFile{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[26]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PlannedFile) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PlannedFile) ProtoMessage() {}

func (x *PlannedFile) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[26]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PlannedFile.ProtoReflect.Descriptor instead.
func (*PlannedFile) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{26}
}

func (x *PlannedFile) GetPath() string {
	if x != nil {
		return x.Path
	}
	return ""
}

func (x *PlannedFile) GetSize() uint64 {
	if x != nil {
		return x.Size
	}
	return 0
}

func (x *PlannedFile) GetTensors() uint32 {
	if x != nil {
		return x.Tensors
	}
	return 0
}

type PlanResponse struct {
	state           protoimpl.MessageState `protogen:"open.v1"`
	Convert         []*Conversion          `protobuf:"bytes,1,rep,name=convert,proto3" json:"convert,omitempty"`
	Drop            []*Decision            `protobuf:"bytes,2,rep,name=drop,proto3" json:"drop,omitempty"`
	Files           []*PlannedFile         `protobuf:"bytes,3,rep,name=files,proto3" json:"files,omitempty"`
	Notes           []*Decision            `protobuf:"bytes,4,rep,name=notes,proto3" json:"notes,omitempty"`
	EmbedsSignature bool                   `protobuf:"varint,5,opt,name=embeds_signature,json=embedsSignature,proto3" json:"embeds_signature,omitempty"`
	// partitions (1.1): the sink honours BeginRequest.shards and
	// BeginRequest.finalize, so the host may split its shards between
	// several runs (`sluice run --partition`). A sink that leaves it false is
	// always written whole, by one run.
	Partitions bool `protobuf:"varint,6,opt,name=partitions,proto3" json:"partitions,omitempty"`
	// packed_convert (1.8): the conversions as one packed list, in place of
	// convert; sent only to a host that announced host_packed_tensors.
	PackedConvert []byte `protobuf:"bytes,7,opt,name=packed_convert,json=packedConvert,proto3" json:"packed_convert,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PlanResponse) Reset() {
	*x = PlanResponse{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[27]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PlanResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PlanResponse) ProtoMessage() {}

func (x *PlanResponse) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[27]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PlanResponse.ProtoReflect.Descriptor instead.
func (*PlanResponse) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{27}
}

func (x *PlanResponse) GetConvert() []*Conversion {
	if x != nil {
		return x.Convert
	}
	return nil
}

func (x *PlanResponse) GetDrop() []*Decision {
	if x != nil {
		return x.Drop
	}
	return nil
}

func (x *PlanResponse) GetFiles() []*PlannedFile {
	if x != nil {
		return x.Files
	}
	return nil
}

func (x *PlanResponse) GetNotes() []*Decision {
	if x != nil {
		return x.Notes
	}
	return nil
}

func (x *PlanResponse) GetEmbedsSignature() bool {
	if x != nil {
		return x.EmbedsSignature
	}
	return false
}

func (x *PlanResponse) GetPartitions() bool {
	if x != nil {
		return x.Partitions
	}
	return false
}

func (x *PlanResponse) GetPackedConvert() []byte {
	if x != nil {
		return x.PackedConvert
	}
	return nil
}

type BeginRequest struct {
	state        protoimpl.MessageState `protogen:"open.v1"`
	Session      uint64                 `protobuf:"varint,1,opt,name=session,proto3" json:"session,omitempty"`
	Manifest     *Manifest              `protobuf:"bytes,2,opt,name=manifest,proto3" json:"manifest,omitempty"`
	SigningKey   []byte                 `protobuf:"bytes,3,opt,name=signing_key,json=signingKey,proto3" json:"signing_key,omitempty"`
	SigningKeyId string                 `protobuf:"bytes,4,opt,name=signing_key_id,json=signingKeyId,proto3" json:"signing_key_id,omitempty"`
	// shards (1.1), when not empty, limits this session to the files of these
	// shards, numbered from 1 as the tensor attribute "sluice.shard" numbers
	// them: the sink creates only those files and receives only their tensors.
	// Files that describe the whole set (an index, side files) are left to a
	// later session with finalize set. Sent only to a sink whose plan said
	// partitions.
	Shards []uint32 `protobuf:"varint,5,rep,packed,name=shards,proto3" json:"shards,omitempty"`
	// finalize (1.1) asks for the files that describe the whole set and
	// nothing else: every shard file was committed by earlier sessions with
	// shards set. No Write follows; Commit writes those files and reports them.
	Finalize bool `protobuf:"varint,6,opt,name=finalize,proto3" json:"finalize,omitempty"`
	// digests (1.2) asks for Artifact.sha256 of every file Commit reports.
	Digests bool `protobuf:"varint,7,opt,name=digests,proto3" json:"digests,omitempty"`
	// no_fsync (1.2): Commit need not fsync the outputs (nor their directory)
	// before renaming them into place; the rename must stay atomic. A sink
	// that ignores it syncs as before.
	NoFsync bool `protobuf:"varint,8,opt,name=no_fsync,json=noFsync,proto3" json:"no_fsync,omitempty"`
	// keep_cache (1.10): leave the outputs' pages in the page cache as they
	// are written, for a next step that reads them at once; by default a sink
	// may drop what it synced and no longer reads. A sink may ignore it.
	KeepCache     bool `protobuf:"varint,9,opt,name=keep_cache,json=keepCache,proto3" json:"keep_cache,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *BeginRequest) Reset() {
	*x = BeginRequest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[28]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *BeginRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*BeginRequest) ProtoMessage() {}

func (x *BeginRequest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[28]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use BeginRequest.ProtoReflect.Descriptor instead.
func (*BeginRequest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{28}
}

func (x *BeginRequest) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

func (x *BeginRequest) GetManifest() *Manifest {
	if x != nil {
		return x.Manifest
	}
	return nil
}

func (x *BeginRequest) GetSigningKey() []byte {
	if x != nil {
		return x.SigningKey
	}
	return nil
}

func (x *BeginRequest) GetSigningKeyId() string {
	if x != nil {
		return x.SigningKeyId
	}
	return ""
}

func (x *BeginRequest) GetShards() []uint32 {
	if x != nil {
		return x.Shards
	}
	return nil
}

func (x *BeginRequest) GetFinalize() bool {
	if x != nil {
		return x.Finalize
	}
	return false
}

func (x *BeginRequest) GetDigests() bool {
	if x != nil {
		return x.Digests
	}
	return false
}

func (x *BeginRequest) GetNoFsync() bool {
	if x != nil {
		return x.NoFsync
	}
	return false
}

func (x *BeginRequest) GetKeepCache() bool {
	if x != nil {
		return x.KeepCache
	}
	return false
}

type WriteRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Msg:
	//
	//	*WriteRequest_Start
	//	*WriteRequest_Chunk
	//	*WriteRequest_Files
	Msg           isWriteRequest_Msg `protobuf_oneof:"msg"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WriteRequest) Reset() {
	*x = WriteRequest{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[29]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WriteRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WriteRequest) ProtoMessage() {}

func (x *WriteRequest) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[29]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WriteRequest.ProtoReflect.Descriptor instead.
func (*WriteRequest) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{29}
}

func (x *WriteRequest) GetMsg() isWriteRequest_Msg {
	if x != nil {
		return x.Msg
	}
	return nil
}

func (x *WriteRequest) GetStart() *WriteStart {
	if x != nil {
		if x, ok := x.Msg.(*WriteRequest_Start); ok {
			return x.Start
		}
	}
	return nil
}

func (x *WriteRequest) GetChunk() *Chunk {
	if x != nil {
		if x, ok := x.Msg.(*WriteRequest_Chunk); ok {
			return x.Chunk
		}
	}
	return nil
}

func (x *WriteRequest) GetFiles() *WriteFiles {
	if x != nil {
		if x, ok := x.Msg.(*WriteRequest_Files); ok {
			return x.Files
		}
	}
	return nil
}

type isWriteRequest_Msg interface {
	isWriteRequest_Msg()
}

type WriteRequest_Start struct {
	Start *WriteStart `protobuf:"bytes,1,opt,name=start,proto3,oneof"`
}

type WriteRequest_Chunk struct {
	Chunk *Chunk `protobuf:"bytes,2,opt,name=chunk,proto3,oneof"`
}

type WriteRequest_Files struct {
	// files (1.3), in a WriteSeries only: see WriteFiles.
	Files *WriteFiles `protobuf:"bytes,3,opt,name=files,proto3,oneof"`
}

func (*WriteRequest_Start) isWriteRequest_Msg() {}

func (*WriteRequest_Chunk) isWriteRequest_Msg() {}

func (*WriteRequest_Files) isWriteRequest_Msg() {}

// WriteFiles (1.3) writes several tensors, in order, each of whose starts
// carries a file reference (no chunks follow), or, since 1.4, its bytes
// whole in one chunk (data). A model of many small tensors then costs a
// message per several tensors rather than two per tensor.
type WriteFiles struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Tensors       []*WriteStart          `protobuf:"bytes,1,rep,name=tensors,proto3" json:"tensors,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WriteFiles) Reset() {
	*x = WriteFiles{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[30]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WriteFiles) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WriteFiles) ProtoMessage() {}

func (x *WriteFiles) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[30]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WriteFiles.ProtoReflect.Descriptor instead.
func (*WriteFiles) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{30}
}

func (x *WriteFiles) GetTensors() []*WriteStart {
	if x != nil {
		return x.Tensors
	}
	return nil
}

type WriteStart struct {
	state   protoimpl.MessageState `protogen:"open.v1"`
	Session uint64                 `protobuf:"varint,1,opt,name=session,proto3" json:"session,omitempty"`
	Tensor  string                 `protobuf:"bytes,2,opt,name=tensor,proto3" json:"tensor,omitempty"`
	Size    uint64                 `protobuf:"varint,3,opt,name=size,proto3" json:"size,omitempty"`
	// file, when set, holds all of the tensor's bytes; no chunks follow.
	File *FileRef `protobuf:"bytes,4,opt,name=file,proto3" json:"file,omitempty"`
	// data (1.4), in a WriteFiles only and only to a plugin that announced
	// write_data, holds all of the tensor's bytes in one chunk: offset 0,
	// length = size, last = true, in an arena slot or inline (the host sends
	// at most 256 KiB inline, and at most 8 MiB inline in one message). A
	// slot is the plugin's until the WriteAck that counts the tensor as
	// written, or until the stream ends; the plugin sends no slot
	// acknowledgement for it.
	Data          *Chunk `protobuf:"bytes,5,opt,name=data,proto3" json:"data,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WriteStart) Reset() {
	*x = WriteStart{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[31]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WriteStart) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WriteStart) ProtoMessage() {}

func (x *WriteStart) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[31]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WriteStart.ProtoReflect.Descriptor instead.
func (*WriteStart) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{31}
}

func (x *WriteStart) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

func (x *WriteStart) GetTensor() string {
	if x != nil {
		return x.Tensor
	}
	return ""
}

func (x *WriteStart) GetSize() uint64 {
	if x != nil {
		return x.Size
	}
	return 0
}

func (x *WriteStart) GetFile() *FileRef {
	if x != nil {
		return x.File
	}
	return nil
}

func (x *WriteStart) GetData() *Chunk {
	if x != nil {
		return x.Data
	}
	return nil
}

type WriteAck struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// slot is an arena slot the plugin has finished with.
	Slot    uint32 `protobuf:"varint,1,opt,name=slot,proto3" json:"slot,omitempty"`
	HasSlot bool   `protobuf:"varint,2,opt,name=has_slot,json=hasSlot,proto3" json:"has_slot,omitempty"`
	Done    bool   `protobuf:"varint,3,opt,name=done,proto3" json:"done,omitempty"`
	// written (1.3) answers a WriteFiles: how many of its tensors, from the
	// first, were written. With done = true, all of them; without, sent just
	// before the error of the next one ends the stream. The arena slots of the
	// tensors it counts (1.4) are the host's again.
	Written       uint32 `protobuf:"varint,4,opt,name=written,proto3" json:"written,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WriteAck) Reset() {
	*x = WriteAck{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[32]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WriteAck) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WriteAck) ProtoMessage() {}

func (x *WriteAck) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[32]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WriteAck.ProtoReflect.Descriptor instead.
func (*WriteAck) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{32}
}

func (x *WriteAck) GetSlot() uint32 {
	if x != nil {
		return x.Slot
	}
	return 0
}

func (x *WriteAck) GetHasSlot() bool {
	if x != nil {
		return x.HasSlot
	}
	return false
}

func (x *WriteAck) GetDone() bool {
	if x != nil {
		return x.Done
	}
	return false
}

func (x *WriteAck) GetWritten() uint32 {
	if x != nil {
		return x.Written
	}
	return 0
}

type Artifact struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Path  string                 `protobuf:"bytes,1,opt,name=path,proto3" json:"path,omitempty"`
	Size  uint64                 `protobuf:"varint,2,opt,name=size,proto3" json:"size,omitempty"`
	// sha256, hex, of the committed file's bytes; empty when the sink did not
	// compute it. It must be exact: the host records it in run manifests and
	// signatures without reading the file.
	Sha256        string `protobuf:"bytes,3,opt,name=sha256,proto3" json:"sha256,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Artifact) Reset() {
	*x = Artifact{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[33]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Artifact) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Artifact) ProtoMessage() {}

func (x *Artifact) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[33]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Artifact.ProtoReflect.Descriptor instead.
func (*Artifact) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{33}
}

func (x *Artifact) GetPath() string {
	if x != nil {
		return x.Path
	}
	return ""
}

func (x *Artifact) GetSize() uint64 {
	if x != nil {
		return x.Size
	}
	return 0
}

func (x *Artifact) GetSha256() string {
	if x != nil {
		return x.Sha256
	}
	return ""
}

type CommitResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Artifacts     []*Artifact            `protobuf:"bytes,1,rep,name=artifacts,proto3" json:"artifacts,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *CommitResponse) Reset() {
	*x = CommitResponse{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[34]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CommitResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CommitResponse) ProtoMessage() {}

func (x *CommitResponse) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[34]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CommitResponse.ProtoReflect.Descriptor instead.
func (*CommitResponse) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{34}
}

func (x *CommitResponse) GetArtifacts() []*Artifact {
	if x != nil {
		return x.Artifacts
	}
	return nil
}

// DirectTargets (1.7) is a sink's answer on a direct lane: the tensors the
// host may write in place.
type DirectTargets struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// files are the final paths of the output files whose descriptors came
	// before this message, in their order: what the host names in errors.
	Files   []string        `protobuf:"bytes,1,rep,name=files,proto3" json:"files,omitempty"`
	Tensors []*DirectTarget `protobuf:"bytes,2,rep,name=tensors,proto3" json:"tensors,omitempty"`
	// packed_tensors (1.8): the targets as one packed list, in place of
	// tensors; sent only to a host that announced host_packed_tensors.
	PackedTensors []byte `protobuf:"bytes,3,opt,name=packed_tensors,json=packedTensors,proto3" json:"packed_tensors,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DirectTargets) Reset() {
	*x = DirectTargets{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[35]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DirectTargets) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DirectTargets) ProtoMessage() {}

func (x *DirectTargets) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[35]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DirectTargets.ProtoReflect.Descriptor instead.
func (*DirectTargets) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{35}
}

func (x *DirectTargets) GetFiles() []string {
	if x != nil {
		return x.Files
	}
	return nil
}

func (x *DirectTargets) GetTensors() []*DirectTarget {
	if x != nil {
		return x.Tensors
	}
	return nil
}

func (x *DirectTargets) GetPackedTensors() []byte {
	if x != nil {
		return x.PackedTensors
	}
	return nil
}

// DirectTarget is one tensor the host may write in place: its bytes, as
// they arrive at the sink (after the conversions of the plan), go unchanged
// to [offset, offset+size) of files[file].
type DirectTarget struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Tensor        string                 `protobuf:"bytes,1,opt,name=tensor,proto3" json:"tensor,omitempty"`
	File          uint32                 `protobuf:"varint,2,opt,name=file,proto3" json:"file,omitempty"`
	Offset        uint64                 `protobuf:"varint,3,opt,name=offset,proto3" json:"offset,omitempty"`
	Size          uint64                 `protobuf:"varint,4,opt,name=size,proto3" json:"size,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DirectTarget) Reset() {
	*x = DirectTarget{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[36]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DirectTarget) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DirectTarget) ProtoMessage() {}

func (x *DirectTarget) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[36]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DirectTarget.ProtoReflect.Descriptor instead.
func (*DirectTarget) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{36}
}

func (x *DirectTarget) GetTensor() string {
	if x != nil {
		return x.Tensor
	}
	return ""
}

func (x *DirectTarget) GetFile() uint32 {
	if x != nil {
		return x.File
	}
	return 0
}

func (x *DirectTarget) GetOffset() uint64 {
	if x != nil {
		return x.Offset
	}
	return 0
}

func (x *DirectTarget) GetSize() uint64 {
	if x != nil {
		return x.Size
	}
	return 0
}

// DirectWritten (1.7) tells the plugin that the host wrote these tensors
// (indexes into DirectTargets.tensors) whole, in place: the sink records
// each as written, as if its Write had returned.
type DirectWritten struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Targets       []uint32               `protobuf:"varint,1,rep,packed,name=targets,proto3" json:"targets,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DirectWritten) Reset() {
	*x = DirectWritten{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[37]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DirectWritten) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DirectWritten) ProtoMessage() {}

func (x *DirectWritten) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[37]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DirectWritten.ProtoReflect.Descriptor instead.
func (*DirectWritten) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{37}
}

func (x *DirectWritten) GetTargets() []uint32 {
	if x != nil {
		return x.Targets
	}
	return nil
}

// DirectHashTo (1.9), an 'h' frame of a direct lane from the plugin: the
// host computes the SHA-256 of files[file] (DirectTargets.files), whose
// bytes before end are written for good.
type DirectHashTo struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	File          uint32                 `protobuf:"varint,1,opt,name=file,proto3" json:"file,omitempty"`
	End           uint64                 `protobuf:"varint,2,opt,name=end,proto3" json:"end,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DirectHashTo) Reset() {
	*x = DirectHashTo{}
	mi := &file_sluice_plugin_1_10_proto_msgTypes[38]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DirectHashTo) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DirectHashTo) ProtoMessage() {}

func (x *DirectHashTo) ProtoReflect() protoreflect.Message {
	mi := &file_sluice_plugin_1_10_proto_msgTypes[38]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DirectHashTo.ProtoReflect.Descriptor instead.
func (*DirectHashTo) Descriptor() ([]byte, []int) {
	return file_sluice_plugin_1_10_proto_rawDescGZIP(), []int{38}
}

func (x *DirectHashTo) GetFile() uint32 {
	if x != nil {
		return x.File
	}
	return 0
}

func (x *DirectHashTo) GetEnd() uint64 {
	if x != nil {
		return x.End
	}
	return 0
}

var File_sluice_plugin_1_10_proto protoreflect.FileDescriptor

const file_sluice_plugin_1_10_proto_rawDesc = "" +
	"\n" +
	"\x18sluice_plugin_1.10.proto\x12\x10sluice.plugin.v1\"\a\n" +
	"\x05Empty\"\xb4\x02\n" +
	"\fCapabilities\x12\x14\n" +
	"\x05arena\x18\x01 \x01(\bR\x05arena\x12\x19\n" +
	"\bfile_ref\x18\x02 \x01(\bR\afileRef\x12\x1d\n" +
	"\n" +
	"max_inline\x18\x03 \x01(\rR\tmaxInline\x12!\n" +
	"\fwrite_series\x18\x04 \x01(\bR\vwriteSeries\x12\x1d\n" +
	"\n" +
	"write_data\x18\x05 \x01(\bR\twriteData\x12%\n" +
	"\x0epacked_strings\x18\x06 \x01(\bR\rpackedStrings\x12\x1f\n" +
	"\vwrite_lanes\x18\a \x01(\bR\n" +
	"writeLanes\x12#\n" +
	"\rdirect_writes\x18\b \x01(\bR\fdirectWrites\x12%\n" +
	"\x0epacked_tensors\x18\t \x01(\bR\rpackedTensors\"\xc3\x01\n" +
	"\x0eGetInfoRequest\x12.\n" +
	"\x13host_protocol_minor\x18\x01 \x01(\rR\x11hostProtocolMinor\x12.\n" +
	"\x13host_packed_strings\x18\x02 \x01(\bR\x11hostPackedStrings\x12.\n" +
	"\x13host_packed_tensors\x18\x03 \x01(\bR\x11hostPackedTensors\x12!\n" +
	"\fhost_digests\x18\x04 \x01(\bR\vhostDigests\"\xe7\x01\n" +
	"\x0fGetInfoResponse\x12\x12\n" +
	"\x04name\x18\x01 \x01(\tR\x04name\x12\x18\n" +
	"\aversion\x18\x02 \x01(\tR\aversion\x12%\n" +
	"\x0eprotocol_minor\x18\x03 \x01(\rR\rprotocolMinor\x12;\n" +
	"\n" +
	"components\x18\x04 \x03(\v2\x1b.sluice.plugin.v1.ComponentR\n" +
	"components\x12B\n" +
	"\fcapabilities\x18\x05 \x01(\v2\x1e.sluice.plugin.v1.CapabilitiesR\fcapabilities\"\x85\x02\n" +
	"\tComponent\x124\n" +
	"\x04kind\x18\x01 \x01(\x0e2 .sluice.plugin.v1.Component.KindR\x04kind\x12\x12\n" +
	"\x04name\x18\x02 \x01(\tR\x04name\x12\x10\n" +
	"\x03doc\x18\x03 \x01(\tR\x03doc\x120\n" +
	"\x06schema\x18\x04 \x01(\v2\x18.sluice.plugin.v1.SchemaR\x06schema\x12\x1e\n" +
	"\n" +
	"extensions\x18\x05 \x03(\tR\n" +
	"extensions\x12\x16\n" +
	"\x06probes\x18\x06 \x01(\bR\x06probes\"2\n" +
	"\x04Kind\x12\x14\n" +
	"\x10KIND_UNSPECIFIED\x10\x00\x12\n" +
	"\n" +
	"\x06SOURCE\x10\x01\x12\b\n" +
	"\x04SINK\x10\x02\"E\n" +
	"\x06Schema\x12;\n" +
	"\n" +
	"attributes\x18\x01 \x03(\v2\x1b.sluice.plugin.v1.AttributeR\n" +
	"attributes\"\x7f\n" +
	"\tAttribute\x12\x12\n" +
	"\x04name\x18\x01 \x01(\tR\x04name\x12\x12\n" +
	"\x04type\x18\x02 \x01(\tR\x04type\x12\x1a\n" +
	"\brequired\x18\x03 \x01(\bR\brequired\x12\x1c\n" +
	"\tsensitive\x18\x04 \x01(\bR\tsensitive\x12\x10\n" +
	"\x03doc\x18\x05 \x01(\tR\x03doc\"@\n" +
	"\fProbeRequest\x12\x1c\n" +
	"\tcomponent\x18\x01 \x01(\tR\tcomponent\x12\x12\n" +
	"\x04path\x18\x02 \x01(\tR\x04path\"%\n" +
	"\rProbeResponse\x12\x14\n" +
	"\x05score\x18\x01 \x01(\x05R\x05score\"L\n" +
	"\vOpenRequest\x12\x1c\n" +
	"\tcomponent\x18\x01 \x01(\tR\tcomponent\x12\x1f\n" +
	"\vconfig_json\x18\x02 \x01(\fR\n" +
	"configJson\"(\n" +
	"\fOpenResponse\x12\x18\n" +
	"\asession\x18\x01 \x01(\x04R\asession\"*\n" +
	"\x0eSessionRequest\x12\x18\n" +
	"\asession\x18\x01 \x01(\x04R\asession\"\xec\x01\n" +
	"\x05Value\x12\x12\n" +
	"\x04type\x18\x01 \x01(\rR\x04type\x12\x12\n" +
	"\x04elem\x18\x02 \x01(\rR\x04elem\x12\x12\n" +
	"\x04bits\x18\x03 \x01(\x06R\x04bits\x12\x10\n" +
	"\x03str\x18\x04 \x01(\tR\x03str\x12\x12\n" +
	"\x04strs\x18\x05 \x03(\tR\x04strs\x12\x10\n" +
	"\x03raw\x18\x06 \x01(\fR\x03raw\x12-\n" +
	"\x05items\x18\a \x03(\v2\x17.sluice.plugin.v1.ValueR\x05items\x12@\n" +
	"\vpacked_strs\x18\b \x01(\v2\x1f.sluice.plugin.v1.PackedStringsR\n" +
	"packedStrs\"=\n" +
	"\rPackedStrings\x12\x14\n" +
	"\x05count\x18\x01 \x01(\x04R\x05count\x12\x16\n" +
	"\x06layout\x18\x02 \x01(\fR\x06layout\"K\n" +
	"\bKeyValue\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12-\n" +
	"\x05value\x18\x02 \x01(\v2\x17.sluice.plugin.v1.ValueR\x05value\"M\n" +
	"\aFileRef\x12\x12\n" +
	"\x04path\x18\x01 \x01(\tR\x04path\x12\x16\n" +
	"\x06offset\x18\x02 \x01(\x04R\x06offset\x12\x16\n" +
	"\x06length\x18\x03 \x01(\x04R\x06length\"\x90\x02\n" +
	"\n" +
	"TensorInfo\x12\x12\n" +
	"\x04name\x18\x01 \x01(\tR\x04name\x12\x14\n" +
	"\x05dtype\x18\x02 \x01(\tR\x05dtype\x12\x14\n" +
	"\x05shape\x18\x03 \x03(\x04R\x05shape\x12\x12\n" +
	"\x04size\x18\x04 \x01(\x04R\x04size\x12=\n" +
	"\x05attrs\x18\x05 \x03(\v2'.sluice.plugin.v1.TensorInfo.AttrsEntryR\x05attrs\x125\n" +
	"\blocation\x18\x06 \x01(\v2\x19.sluice.plugin.v1.FileRefR\blocation\x1a8\n" +
	"\n" +
	"AttrsEntry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12\x14\n" +
	"\x05value\x18\x02 \x01(\tR\x05value:\x028\x01\"\xa1\x01\n" +
	"\bManifest\x126\n" +
	"\bmetadata\x18\x01 \x03(\v2\x1a.sluice.plugin.v1.KeyValueR\bmetadata\x126\n" +
	"\atensors\x18\x02 \x03(\v2\x1c.sluice.plugin.v1.TensorInfoR\atensors\x12%\n" +
	"\x0epacked_tensors\x18\x03 \x01(\fR\rpackedTensors\"J\n" +
	"\x10DescribeResponse\x126\n" +
	"\bmanifest\x18\x01 \x01(\v2\x1a.sluice.plugin.v1.ManifestR\bmanifest\"~\n" +
	"\vReadRequest\x123\n" +
	"\x05start\x18\x01 \x01(\v2\x1b.sluice.plugin.v1.ReadStartH\x00R\x05start\x123\n" +
	"\x05grant\x18\x02 \x01(\v2\x1b.sluice.plugin.v1.SlotGrantH\x00R\x05grantB\x05\n" +
	"\x03msg\"\x86\x01\n" +
	"\tReadStart\x12\x18\n" +
	"\asession\x18\x01 \x01(\x04R\asession\x12\x16\n" +
	"\x06tensor\x18\x02 \x01(\tR\x06tensor\x12\x14\n" +
	"\x05arena\x18\x03 \x01(\bR\x05arena\x12\x14\n" +
	"\x05align\x18\x04 \x01(\x04R\x05align\x12\x1b\n" +
	"\tmax_chunk\x18\x05 \x01(\x04R\bmaxChunk\"!\n" +
	"\tSlotGrant\x12\x14\n" +
	"\x05slots\x18\x01 \x03(\rR\x05slots\"\xa7\x01\n" +
	"\x05Chunk\x12\x16\n" +
	"\x06offset\x18\x01 \x01(\x04R\x06offset\x12\x16\n" +
	"\x06length\x18\x02 \x01(\x04R\x06length\x12\x18\n" +
	"\x06inline\x18\x03 \x01(\fH\x00R\x06inline\x12\x14\n" +
	"\x04slot\x18\x04 \x01(\rH\x00R\x04slot\x12\x12\n" +
	"\x04last\x18\x05 \x01(\bR\x04last\x12\x1f\n" +
	"\vslot_offset\x18\x06 \x01(\x04R\n" +
	"slotOffsetB\t\n" +
	"\apayload\"_\n" +
	"\vPlanRequest\x12\x18\n" +
	"\asession\x18\x01 \x01(\x04R\asession\x126\n" +
	"\bmanifest\x18\x02 \x01(\v2\x1a.sluice.plugin.v1.ManifestR\bmanifest\"R\n" +
	"\n" +
	"Conversion\x12\x16\n" +
	"\x06tensor\x18\x01 \x01(\tR\x06tensor\x12\x14\n" +
	"\x05dtype\x18\x02 \x01(\tR\x05dtype\x12\x16\n" +
	"\x06reason\x18\x03 \x01(\tR\x06reason\"4\n" +
	"\bDecision\x12\x16\n" +
	"\x06tensor\x18\x01 \x01(\tR\x06tensor\x12\x10\n" +
	"\x03msg\x18\x02 \x01(\tR\x03msg\"O\n" +
	"\vPlannedFile\x12\x12\n" +
	"\x04path\x18\x01 \x01(\tR\x04path\x12\x12\n" +
	"\x04size\x18\x02 \x01(\x04R\x04size\x12\x18\n" +
	"\atensors\x18\x03 \x01(\rR\atensors\"\xcf\x02\n" +
	"\fPlanResponse\x126\n" +
	"\aconvert\x18\x01 \x03(\v2\x1c.sluice.plugin.v1.ConversionR\aconvert\x12.\n" +
	"\x04drop\x18\x02 \x03(\v2\x1a.sluice.plugin.v1.DecisionR\x04drop\x123\n" +
	"\x05files\x18\x03 \x03(\v2\x1d.sluice.plugin.v1.PlannedFileR\x05files\x120\n" +
	"\x05notes\x18\x04 \x03(\v2\x1a.sluice.plugin.v1.DecisionR\x05notes\x12)\n" +
	"\x10embeds_signature\x18\x05 \x01(\bR\x0fembedsSignature\x12\x1e\n" +
	"\n" +
	"partitions\x18\x06 \x01(\bR\n" +
	"partitions\x12%\n" +
	"\x0epacked_convert\x18\a \x01(\fR\rpackedConvert\"\xaf\x02\n" +
	"\fBeginRequest\x12\x18\n" +
	"\asession\x18\x01 \x01(\x04R\asession\x126\n" +
	"\bmanifest\x18\x02 \x01(\v2\x1a.sluice.plugin.v1.ManifestR\bmanifest\x12\x1f\n" +
	"\vsigning_key\x18\x03 \x01(\fR\n" +
	"signingKey\x12$\n" +
	"\x0esigning_key_id\x18\x04 \x01(\tR\fsigningKeyId\x12\x16\n" +
	"\x06shards\x18\x05 \x03(\rR\x06shards\x12\x1a\n" +
	"\bfinalize\x18\x06 \x01(\bR\bfinalize\x12\x18\n" +
	"\adigests\x18\a \x01(\bR\adigests\x12\x19\n" +
	"\bno_fsync\x18\b \x01(\bR\anoFsync\x12\x1d\n" +
	"\n" +
	"keep_cache\x18\t \x01(\bR\tkeepCache\"\xb2\x01\n" +
	"\fWriteRequest\x124\n" +
	"\x05start\x18\x01 \x01(\v2\x1c.sluice.plugin.v1.WriteStartH\x00R\x05start\x12/\n" +
	"\x05chunk\x18\x02 \x01(\v2\x17.sluice.plugin.v1.ChunkH\x00R\x05chunk\x124\n" +
	"\x05files\x18\x03 \x01(\v2\x1c.sluice.plugin.v1.WriteFilesH\x00R\x05filesB\x05\n" +
	"\x03msg\"D\n" +
	"\n" +
	"WriteFiles\x126\n" +
	"\atensors\x18\x01 \x03(\v2\x1c.sluice.plugin.v1.WriteStartR\atensors\"\xae\x01\n" +
	"\n" +
	"WriteStart\x12\x18\n" +
	"\asession\x18\x01 \x01(\x04R\asession\x12\x16\n" +
	"\x06tensor\x18\x02 \x01(\tR\x06tensor\x12\x12\n" +
	"\x04size\x18\x03 \x01(\x04R\x04size\x12-\n" +
	"\x04file\x18\x04 \x01(\v2\x19.sluice.plugin.v1.FileRefR\x04file\x12+\n" +
	"\x04data\x18\x05 \x01(\v2\x17.sluice.plugin.v1.ChunkR\x04data\"g\n" +
	"\bWriteAck\x12\x12\n" +
	"\x04slot\x18\x01 \x01(\rR\x04slot\x12\x19\n" +
	"\bhas_slot\x18\x02 \x01(\bR\ahasSlot\x12\x12\n" +
	"\x04done\x18\x03 \x01(\bR\x04done\x12\x18\n" +
	"\awritten\x18\x04 \x01(\rR\awritten\"J\n" +
	"\bArtifact\x12\x12\n" +
	"\x04path\x18\x01 \x01(\tR\x04path\x12\x12\n" +
	"\x04size\x18\x02 \x01(\x04R\x04size\x12\x16\n" +
	"\x06sha256\x18\x03 \x01(\tR\x06sha256\"J\n" +
	"\x0eCommitResponse\x128\n" +
	"\tartifacts\x18\x01 \x03(\v2\x1a.sluice.plugin.v1.ArtifactR\tartifacts\"\x86\x01\n" +
	"\rDirectTargets\x12\x14\n" +
	"\x05files\x18\x01 \x03(\tR\x05files\x128\n" +
	"\atensors\x18\x02 \x03(\v2\x1e.sluice.plugin.v1.DirectTargetR\atensors\x12%\n" +
	"\x0epacked_tensors\x18\x03 \x01(\fR\rpackedTensors\"f\n" +
	"\fDirectTarget\x12\x16\n" +
	"\x06tensor\x18\x01 \x01(\tR\x06tensor\x12\x12\n" +
	"\x04file\x18\x02 \x01(\rR\x04file\x12\x16\n" +
	"\x06offset\x18\x03 \x01(\x04R\x06offset\x12\x12\n" +
	"\x04size\x18\x04 \x01(\x04R\x04size\")\n" +
	"\rDirectWritten\x12\x18\n" +
	"\atargets\x18\x01 \x03(\rR\atargets\"4\n" +
	"\fDirectHashTo\x12\x12\n" +
	"\x04file\x18\x01 \x01(\rR\x04file\x12\x10\n" +
	"\x03end\x18\x02 \x01(\x04R\x03end2\xa2\x01\n" +
	"\x06Plugin\x12N\n" +
	"\aGetInfo\x12 .sluice.plugin.v1.GetInfoRequest\x1a!.sluice.plugin.v1.GetInfoResponse\x12H\n" +
	"\x05Probe\x12\x1e.sluice.plugin.v1.ProbeRequest\x1a\x1f.sluice.plugin.v1.ProbeResponse2\xa9\x02\n" +
	"\x06Source\x12E\n" +
	"\x04Open\x12\x1d.sluice.plugin.v1.OpenRequest\x1a\x1e.sluice.plugin.v1.OpenResponse\x12P\n" +
	"\bDescribe\x12 .sluice.plugin.v1.SessionRequest\x1a\".sluice.plugin.v1.DescribeResponse\x12B\n" +
	"\x04Read\x12\x1d.sluice.plugin.v1.ReadRequest\x1a\x17.sluice.plugin.v1.Chunk(\x010\x01\x12B\n" +
	"\x05Close\x12 .sluice.plugin.v1.SessionRequest\x1a\x17.sluice.plugin.v1.Empty2\x80\x04\n" +
	"\x04Sink\x12E\n" +
	"\x04Open\x12\x1d.sluice.plugin.v1.OpenRequest\x1a\x1e.sluice.plugin.v1.OpenResponse\x12E\n" +
	"\x04Plan\x12\x1d.sluice.plugin.v1.PlanRequest\x1a\x1e.sluice.plugin.v1.PlanResponse\x12@\n" +
	"\x05Begin\x12\x1e.sluice.plugin.v1.BeginRequest\x1a\x17.sluice.plugin.v1.Empty\x12G\n" +
	"\x05Write\x12\x1e.sluice.plugin.v1.WriteRequest\x1a\x1a.sluice.plugin.v1.WriteAck(\x010\x01\x12M\n" +
	"\vWriteSeries\x12\x1e.sluice.plugin.v1.WriteRequest\x1a\x1a.sluice.plugin.v1.WriteAck(\x010\x01\x12L\n" +
	"\x06Commit\x12 .sluice.plugin.v1.SessionRequest\x1a .sluice.plugin.v1.CommitResponse\x12B\n" +
	"\x05Abort\x12 .sluice.plugin.v1.SessionRequest\x1a\x17.sluice.plugin.v1.EmptyB3Z1github.com/sluice-ml/sluice/sdk/proto/v1;pluginv1b\x06proto3"

var (
	file_sluice_plugin_1_10_proto_rawDescOnce sync.Once
	file_sluice_plugin_1_10_proto_rawDescData []byte
)

func file_sluice_plugin_1_10_proto_rawDescGZIP() []byte {
	file_sluice_plugin_1_10_proto_rawDescOnce.Do(func() {
		file_sluice_plugin_1_10_proto_rawDescData = protoimpl.X.CompressGZIP(unsafe.Slice(unsafe.StringData(file_sluice_plugin_1_10_proto_rawDesc), len(file_sluice_plugin_1_10_proto_rawDesc)))
	})
	return file_sluice_plugin_1_10_proto_rawDescData
}

var file_sluice_plugin_1_10_proto_enumTypes = make([]protoimpl.EnumInfo, 1)
var file_sluice_plugin_1_10_proto_msgTypes = make([]protoimpl.MessageInfo, 40)
var file_sluice_plugin_1_10_proto_goTypes = []any{
	(Component_Kind)(0),      // 0: sluice.plugin.v1.Component.Kind
	(*Empty)(nil),            // 1: sluice.plugin.v1.Empty
	(*Capabilities)(nil),     // 2: sluice.plugin.v1.Capabilities
	(*GetInfoRequest)(nil),   // 3: sluice.plugin.v1.GetInfoRequest
	(*GetInfoResponse)(nil),  // 4: sluice.plugin.v1.GetInfoResponse
	(*Component)(nil),        // 5: sluice.plugin.v1.Component
	(*Schema)(nil),           // 6: sluice.plugin.v1.Schema
	(*Attribute)(nil),        // 7: sluice.plugin.v1.Attribute
	(*ProbeRequest)(nil),     // 8: sluice.plugin.v1.ProbeRequest
	(*ProbeResponse)(nil),    // 9: sluice.plugin.v1.ProbeResponse
	(*OpenRequest)(nil),      // 10: sluice.plugin.v1.OpenRequest
	(*OpenResponse)(nil),     // 11: sluice.plugin.v1.OpenResponse
	(*SessionRequest)(nil),   // 12: sluice.plugin.v1.SessionRequest
	(*Value)(nil),            // 13: sluice.plugin.v1.Value
	(*PackedStrings)(nil),    // 14: sluice.plugin.v1.PackedStrings
	(*KeyValue)(nil),         // 15: sluice.plugin.v1.KeyValue
	(*FileRef)(nil),          // 16: sluice.plugin.v1.FileRef
	(*TensorInfo)(nil),       // 17: sluice.plugin.v1.TensorInfo
	(*Manifest)(nil),         // 18: sluice.plugin.v1.Manifest
	(*DescribeResponse)(nil), // 19: sluice.plugin.v1.DescribeResponse
	(*ReadRequest)(nil),      // 20: sluice.plugin.v1.ReadRequest
	(*ReadStart)(nil),        // 21: sluice.plugin.v1.ReadStart
	(*SlotGrant)(nil),        // 22: sluice.plugin.v1.SlotGrant
	(*Chunk)(nil),            // 23: sluice.plugin.v1.Chunk
	(*PlanRequest)(nil),      // 24: sluice.plugin.v1.PlanRequest
	(*Conversion)(nil),       // 25: sluice.plugin.v1.Conversion
	(*Decision)(nil),         // 26: sluice.plugin.v1.Decision
	(*PlannedFile)(nil),      // 27: sluice.plugin.v1.PlannedFile
	(*PlanResponse)(nil),     // 28: sluice.plugin.v1.PlanResponse
	(*BeginRequest)(nil),     // 29: sluice.plugin.v1.BeginRequest
	(*WriteRequest)(nil),     // 30: sluice.plugin.v1.WriteRequest
	(*WriteFiles)(nil),       // 31: sluice.plugin.v1.WriteFiles
	(*WriteStart)(nil),       // 32: sluice.plugin.v1.WriteStart
	(*WriteAck)(nil),         // 33: sluice.plugin.v1.WriteAck
	(*Artifact)(nil),         // 34: sluice.plugin.v1.Artifact
	(*CommitResponse)(nil),   // 35: sluice.plugin.v1.CommitResponse
	(*DirectTargets)(nil),    // 36: sluice.plugin.v1.DirectTargets
	(*DirectTarget)(nil),     // 37: sluice.plugin.v1.DirectTarget
	(*DirectWritten)(nil),    // 38: sluice.plugin.v1.DirectWritten
	(*DirectHashTo)(nil),     // 39: sluice.plugin.v1.DirectHashTo
	nil,                      // 40: sluice.plugin.v1.TensorInfo.AttrsEntry
}
var file_sluice_plugin_1_10_proto_depIdxs = []int32{
	5,  // 0: sluice.plugin.v1.GetInfoResponse.components:type_name -> sluice.plugin.v1.Component
	2,  // 1: sluice.plugin.v1.GetInfoResponse.capabilities:type_name -> sluice.plugin.v1.Capabilities
	0,  // 2: sluice.plugin.v1.Component.kind:type_name -> sluice.plugin.v1.Component.Kind
	6,  // 3: sluice.plugin.v1.Component.schema:type_name -> sluice.plugin.v1.Schema
	7,  // 4: sluice.plugin.v1.Schema.attributes:type_name -> sluice.plugin.v1.Attribute
	13, // 5: sluice.plugin.v1.Value.items:type_name -> sluice.plugin.v1.Value
	14, // 6: sluice.plugin.v1.Value.packed_strs:type_name -> sluice.plugin.v1.PackedStrings
	13, // 7: sluice.plugin.v1.KeyValue.value:type_name -> sluice.plugin.v1.Value
	40, // 8: sluice.plugin.v1.TensorInfo.attrs:type_name -> sluice.plugin.v1.TensorInfo.AttrsEntry
	16, // 9: sluice.plugin.v1.TensorInfo.location:type_name -> sluice.plugin.v1.FileRef
	15, // 10: sluice.plugin.v1.Manifest.metadata:type_name -> sluice.plugin.v1.KeyValue
	17, // 11: sluice.plugin.v1.Manifest.tensors:type_name -> sluice.plugin.v1.TensorInfo
	18, // 12: sluice.plugin.v1.DescribeResponse.manifest:type_name -> sluice.plugin.v1.Manifest
	21, // 13: sluice.plugin.v1.ReadRequest.start:type_name -> sluice.plugin.v1.ReadStart
	22, // 14: sluice.plugin.v1.ReadRequest.grant:type_name -> sluice.plugin.v1.SlotGrant
	18, // 15: sluice.plugin.v1.PlanRequest.manifest:type_name -> sluice.plugin.v1.Manifest
	25, // 16: sluice.plugin.v1.PlanResponse.convert:type_name -> sluice.plugin.v1.Conversion
	26, // 17: sluice.plugin.v1.PlanResponse.drop:type_name -> sluice.plugin.v1.Decision
	27, // 18: sluice.plugin.v1.PlanResponse.files:type_name -> sluice.plugin.v1.PlannedFile
	26, // 19: sluice.plugin.v1.PlanResponse.notes:type_name -> sluice.plugin.v1.Decision
	18, // 20: sluice.plugin.v1.BeginRequest.manifest:type_name -> sluice.plugin.v1.Manifest
	32, // 21: sluice.plugin.v1.WriteRequest.start:type_name -> sluice.plugin.v1.WriteStart
	23, // 22: sluice.plugin.v1.WriteRequest.chunk:type_name -> sluice.plugin.v1.Chunk
	31, // 23: sluice.plugin.v1.WriteRequest.files:type_name -> sluice.plugin.v1.WriteFiles
	32, // 24: sluice.plugin.v1.WriteFiles.tensors:type_name -> sluice.plugin.v1.WriteStart
	16, // 25: sluice.plugin.v1.WriteStart.file:type_name -> sluice.plugin.v1.FileRef
	23, // 26: sluice.plugin.v1.WriteStart.data:type_name -> sluice.plugin.v1.Chunk
	34, // 27: sluice.plugin.v1.CommitResponse.artifacts:type_name -> sluice.plugin.v1.Artifact
	37, // 28: sluice.plugin.v1.DirectTargets.tensors:type_name -> sluice.plugin.v1.DirectTarget
	3,  // 29: sluice.plugin.v1.Plugin.GetInfo:input_type -> sluice.plugin.v1.GetInfoRequest
	8,  // 30: sluice.plugin.v1.Plugin.Probe:input_type -> sluice.plugin.v1.ProbeRequest
	10, // 31: sluice.plugin.v1.Source.Open:input_type -> sluice.plugin.v1.OpenRequest
	12, // 32: sluice.plugin.v1.Source.Describe:input_type -> sluice.plugin.v1.SessionRequest
	20, // 33: sluice.plugin.v1.Source.Read:input_type -> sluice.plugin.v1.ReadRequest
	12, // 34: sluice.plugin.v1.Source.Close:input_type -> sluice.plugin.v1.SessionRequest
	10, // 35: sluice.plugin.v1.Sink.Open:input_type -> sluice.plugin.v1.OpenRequest
	24, // 36: sluice.plugin.v1.Sink.Plan:input_type -> sluice.plugin.v1.PlanRequest
	29, // 37: sluice.plugin.v1.Sink.Begin:input_type -> sluice.plugin.v1.BeginRequest
	30, // 38: sluice.plugin.v1.Sink.Write:input_type -> sluice.plugin.v1.WriteRequest
	30, // 39: sluice.plugin.v1.Sink.WriteSeries:input_type -> sluice.plugin.v1.WriteRequest
	12, // 40: sluice.plugin.v1.Sink.Commit:input_type -> sluice.plugin.v1.SessionRequest
	12, // 41: sluice.plugin.v1.Sink.Abort:input_type -> sluice.plugin.v1.SessionRequest
	4,  // 42: sluice.plugin.v1.Plugin.GetInfo:output_type -> sluice.plugin.v1.GetInfoResponse
	9,  // 43: sluice.plugin.v1.Plugin.Probe:output_type -> sluice.plugin.v1.ProbeResponse
	11, // 44: sluice.plugin.v1.Source.Open:output_type -> sluice.plugin.v1.OpenResponse
	19, // 45: sluice.plugin.v1.Source.Describe:output_type -> sluice.plugin.v1.DescribeResponse
	23, // 46: sluice.plugin.v1.Source.Read:output_type -> sluice.plugin.v1.Chunk
	1,  // 47: sluice.plugin.v1.Source.Close:output_type -> sluice.plugin.v1.Empty
	11, // 48: sluice.plugin.v1.Sink.Open:output_type -> sluice.plugin.v1.OpenResponse
	28, // 49: sluice.plugin.v1.Sink.Plan:output_type -> sluice.plugin.v1.PlanResponse
	1,  // 50: sluice.plugin.v1.Sink.Begin:output_type -> sluice.plugin.v1.Empty
	33, // 51: sluice.plugin.v1.Sink.Write:output_type -> sluice.plugin.v1.WriteAck
	33, // 52: sluice.plugin.v1.Sink.WriteSeries:output_type -> sluice.plugin.v1.WriteAck
	35, // 53: sluice.plugin.v1.Sink.Commit:output_type -> sluice.plugin.v1.CommitResponse
	1,  // 54: sluice.plugin.v1.Sink.Abort:output_type -> sluice.plugin.v1.Empty
	42, // [42:55] is the sub-list for method output_type
	29, // [29:42] is the sub-list for method input_type
	29, // [29:29] is the sub-list for extension type_name
	29, // [29:29] is the sub-list for extension extendee
	0,  // [0:29] is the sub-list for field type_name
}

func init() { file_sluice_plugin_1_10_proto_init() }
func file_sluice_plugin_1_10_proto_init() {
	if File_sluice_plugin_1_10_proto != nil {
		return
	}
	file_sluice_plugin_1_10_proto_msgTypes[19].OneofWrappers = []any{
		(*ReadRequest_Start)(nil),
		(*ReadRequest_Grant)(nil),
	}
	file_sluice_plugin_1_10_proto_msgTypes[22].OneofWrappers = []any{
		(*Chunk_Inline)(nil),
		(*Chunk_Slot)(nil),
	}
	file_sluice_plugin_1_10_proto_msgTypes[29].OneofWrappers = []any{
		(*WriteRequest_Start)(nil),
		(*WriteRequest_Chunk)(nil),
		(*WriteRequest_Files)(nil),
	}
	type x struct{}
	out := protoimpl.TypeBuilder{
		File: protoimpl.DescBuilder{
			GoPackagePath: reflect.TypeOf(x{}).PkgPath(),
			RawDescriptor: unsafe.Slice(unsafe.StringData(file_sluice_plugin_1_10_proto_rawDesc), len(file_sluice_plugin_1_10_proto_rawDesc)),
			NumEnums:      1,
			NumMessages:   40,
			NumExtensions: 0,
			NumServices:   3,
		},
		GoTypes:           file_sluice_plugin_1_10_proto_goTypes,
		DependencyIndexes: file_sluice_plugin_1_10_proto_depIdxs,
		EnumInfos:         file_sluice_plugin_1_10_proto_enumTypes,
		MessageInfos:      file_sluice_plugin_1_10_proto_msgTypes,
	}.Build()
	File_sluice_plugin_1_10_proto = out.File
	file_sluice_plugin_1_10_proto_goTypes = nil
	file_sluice_plugin_1_10_proto_depIdxs = nil
}
