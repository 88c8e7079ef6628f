package plugin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-ml/sluice/internal/fuzzseed"
	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// The fuzz targets here feed a plugin what it receives from a host: request
// messages as protobuf bytes (gRPC decodes them before our code runs) and
// sequences of stream messages. A plugin must answer every input with a
// result or an error: no panic, no hang, no sink handed more or fewer bytes
// than the tensor's declared size.

// manifestSeeds are manifests as a host sends them (in a PlanRequest).
func manifestSeeds() [][]byte {
	m := &tensor.Manifest{}
	m.Metadata.Set("general.name", tensor.StringValue("x"))
	m.Metadata.Set("n", tensor.U32Value(7))
	m.Metadata.Set("arr", tensor.Int32Array([]int32{1, -2}))
	m.Metadata.Set("strs", tensor.StringArray([]string{"a", ""}))
	nested, _ := tensor.NestedArray([]tensor.Value{tensor.StringArray([]string{"x"}), tensor.Int32Array([]int32{3})})
	m.Metadata.Set("nested", nested)
	m.Tensors = []tensor.TensorInfo{
		{Name: "w", DType: tensor.F32, Shape: []uint64{2, 3}, Size: 24, Attrs: map[string]string{tensor.AttrShard: "1/2"}},
		{Name: "q", DType: tensor.Q8_0, Shape: []uint64{64}, Size: 68, Location: &tensor.FileRef{Path: "/x", Offset: 8, Length: 68}},
	}
	var out [][]byte
	for _, req := range []proto.Message{
		&pb.PlanRequest{Session: 1, Manifest: ManifestToProto(m)},
		&pb.PlanRequest{Session: 1, Manifest: ManifestToProto(&tensor.Manifest{})},
		&pb.PlanRequest{Session: 1, Manifest: &pb.Manifest{Metadata: []*pb.KeyValue{{Key: "k", Value: &pb.Value{Type: 9, Elem: 9, Items: []*pb.Value{{Type: 9, Elem: 4, Raw: []byte{1, 0, 0, 0}}}}}}}},
		&pb.PlanRequest{Session: 1, Manifest: manifestToProto(m, wireForms{strings: true})},
		&pb.PlanRequest{Session: 1, Manifest: manifestToProto(m, wireForms{strings: true, tensors: true})},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzManifestFromProto decodes a PlanRequest (the same manifest travels in
// BeginRequest and DescribeResponse) and converts its manifest: any bytes
// give a manifest or an error, and a manifest converts back to the wire
// form it came from after one round, in every packed form too.
func FuzzManifestFromProto(f *testing.F) {
	for _, b := range manifestSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req pb.PlanRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			return
		}
		m, err := ManifestFromProto(req.Manifest)
		if err != nil {
			return
		}
		once := ManifestToProto(m)
		back, err := ManifestFromProto(once)
		if err != nil {
			t.Fatalf("a manifest this side produced does not convert back: %v", err)
		}
		if twice := ManifestToProto(back); !proto.Equal(once, twice) {
			t.Fatalf("the manifest changed in a round trip:\n%v\n%v", once, twice)
		}
		for _, forms := range []wireForms{{strings: true}, {tensors: true}, {strings: true, tensors: true}} {
			packed, err := ManifestFromProto(manifestToProto(m, forms))
			if err != nil {
				t.Fatalf("a manifest this side produced in the packed forms %+v does not convert back: %v", forms, err)
			}
			if twice := ManifestToProto(packed); !proto.Equal(once, twice) {
				t.Fatalf("the manifest changed in a round trip in the packed forms %+v:\n%v\n%v", forms, once, twice)
			}
		}
	})
}

// fuzzConfig has a field of every kind SchemaOf maps.
type fuzzConfig struct {
	Path    string            `hcl:"path"`
	Only    []string          `hcl:"only,optional"`
	Workers int               `hcl:"workers,optional"`
	Ratio   float64           `hcl:"ratio,optional"`
	Flag    *bool             `hcl:"flag,optional"`
	Labels  map[string]string `hcl:"labels,optional"`
	Key     string            `hcl:"key,optional,sensitive"`
	Any     any               `hcl:"any,optional"`
}

var configSeeds = []string{
	`{"path":"x"}`,
	`{"path":"x","only":["a*","b"],"workers":3,"ratio":0.5,"flag":true,"labels":{"a":"b"},"key":"s","any":[1,{"x":null}]}`,
	`{"path":null}`, `{"path":1}`, `{"pth":"x"}`, `[]`, ``, `{"path":"x","workers":1e400}`,
}

// FuzzConfigDecode decodes a component's configuration JSON as a plugin's
// Open does: any bytes give a configuration or a *ConfigError.
func FuzzConfigDecode(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c fuzzConfig
		err := Config{JSON: b}.Decode(&c)
		if err == nil {
			return
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || !IsBadConfig(err) {
			t.Fatalf("a malformed configuration gave %T %v, want a *ConfigError", err, err)
		}
	})
}

// script turns fuzz bytes into a sequence of stream messages. Each message
// starts with an opcode byte; numbers are little-endian, clipped to small
// ranges so the fuzzer explores sequences rather than sizes.
type script struct{ b []byte }

func (s *script) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *script) u16() uint64 {
	var v [2]byte
	v[0], v[1] = s.byte(), s.byte()
	return uint64(binary.LittleEndian.Uint16(v[:]))
}

// num is a number that is usually small, sometimes huge.
func (s *script) num() uint64 {
	switch c := s.byte(); c {
	case 0xff:
		return 1<<64 - 1
	case 0xfe:
		return 1 << 63
	case 0xfd:
		return 1 << 31
	default:
		return uint64(c)
	}
}

const (
	fuzzSlots    = 4
	fuzzSlotSize = 64
)

// writeScript decodes a Write stream: WriteStart, then chunks.
func writeScript(b []byte, file string) []*pb.WriteRequest {
	s := &script{b: b}
	var out []*pb.WriteRequest
	for len(s.b) > 0 && len(out) < 64 {
		switch s.byte() % 5 {
		case 0:
			start := &pb.WriteStart{Session: s.num(), Tensor: "t", Size: s.num()}
			if s.byte()%2 == 1 {
				start.File = &pb.FileRef{Path: file, Offset: s.num(), Length: s.num()}
			}
			out = append(out, &pb.WriteRequest{Msg: &pb.WriteRequest_Start{Start: start}})
		case 1, 2:
			n := s.num()
			data := make([]byte, min(n, 256))
			c := &pb.Chunk{Offset: s.num(), Length: n, Payload: &pb.Chunk_Inline{Inline: data}, Last: s.byte()%2 == 1}
			out = append(out, &pb.WriteRequest{Msg: &pb.WriteRequest_Chunk{Chunk: c}})
		case 3:
			c := &pb.Chunk{Offset: s.num(), Length: s.num(), Payload: &pb.Chunk_Slot{Slot: uint32(s.num())}, Last: s.byte()%2 == 1}
			out = append(out, &pb.WriteRequest{Msg: &pb.WriteRequest_Chunk{Chunk: c}})
		case 4:
			out = append(out, &pb.WriteRequest{}) // neither start nor chunk
		}
	}
	return out
}

// readScript decodes a Read stream: ReadStart, then slot grants.
func readScript(b []byte) []*pb.ReadRequest {
	s := &script{b: b}
	var out []*pb.ReadRequest
	for len(s.b) > 0 && len(out) < 64 {
		switch s.byte() % 3 {
		case 0:
			tensorName := "t"
			if s.byte()%4 == 0 {
				tensorName = "missing"
			}
			out = append(out, &pb.ReadRequest{Msg: &pb.ReadRequest_Start{Start: &pb.ReadStart{
				Session: s.num(), Tensor: tensorName, Arena: s.byte()%2 == 1, Align: s.num(), MaxChunk: s.num(),
			}}})
		case 1:
			var slots []uint32
			for i := s.byte() % 4; i > 0; i-- {
				slots = append(slots, uint32(s.num()))
			}
			out = append(out, &pb.ReadRequest{Msg: &pb.ReadRequest_Grant{Grant: &pb.SlotGrant{Slots: slots}}})
		case 2:
			out = append(out, &pb.ReadRequest{})
		}
	}
	return out
}

// fakeStream is a server stream that replays messages, then io.EOF, and
// records what the server sends.
type fakeStream[Req, Resp any] struct {
	ctx  context.Context
	mu   sync.Mutex
	in   []*Req
	sent []*Resp
}

func (f *fakeStream[Req, Resp]) Recv() (*Req, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.in) == 0 {
		return nil, io.EOF
	}
	m := f.in[0]
	f.in = f.in[1:]
	return m, nil
}

func (f *fakeStream[Req, Resp]) Send(m *Resp) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, m)
	return nil
}

func (f *fakeStream[Req, Resp]) Context() context.Context     { return f.ctx }
func (f *fakeStream[Req, Resp]) SetHeader(metadata.MD) error  { return nil }
func (f *fakeStream[Req, Resp]) SendHeader(metadata.MD) error { return nil }
func (f *fakeStream[Req, Resp]) SetTrailer(metadata.MD)       {}
func (f *fakeStream[Req, Resp]) SendMsg(any) error            { return nil }
func (f *fakeStream[Req, Resp]) RecvMsg(any) error            { return nil }

// countingSink records how many bytes each Write received.
type countingSink struct {
	mu  sync.Mutex
	got map[string]uint64
}

func (s *countingSink) Plan(ctx context.Context, in *tensor.Manifest) (*SinkPlan, error) {
	return &SinkPlan{}, nil
}
func (s *countingSink) Begin(ctx context.Context, m *tensor.Manifest, _ BeginOptions) error {
	return nil
}
func (s *countingSink) Write(ctx context.Context, name string, data TensorData) error {
	n, err := io.Copy(io.Discard, data)
	s.mu.Lock()
	s.got[name] = uint64(n)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if uint64(n) != data.Size() {
		return fmt.Errorf("%d of %d bytes", n, data.Size())
	}
	return nil
}
func (s *countingSink) Commit(ctx context.Context) ([]Artifact, error) { return nil, nil }
func (s *countingSink) Abort(ctx context.Context) error                { return nil }

// sizedSource serves one tensor "t" of the given size.
type sizedSource struct{ size uint64 }

func (s *sizedSource) Describe(ctx context.Context) (*tensor.Manifest, error) {
	return &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "t", DType: tensor.U8, Shape: []uint64{s.size}, Size: s.size}}}, nil
}
func (s *sizedSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return io.NopCloser(io.LimitReader(zeros{}, int64(s.size))), nil
}
func (s *sizedSource) Close() error { return nil }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// fuzzServer is a plugin server with one sink session and one source
// session (id 1 each is what the scripts usually name), over a small arena.
func fuzzServer(t testing.TB, sourceSize uint64) (*server, *countingSink) {
	arena, err := NewArena(fuzzSlots, fuzzSlotSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arena.Close() })
	sk := &countingSink{got: map[string]uint64{}}
	srv := newServer(&Plugin{Name: "fuzz", Version: "0"}, arena)
	srv.sinks[1] = sk
	srv.sources[1] = &sourceSession{src: &sizedSource{size: sourceSize}}
	return srv, sk
}

// fuzzRefFile writes the 100-byte file the scripts' file references name.
func fuzzRefFile(f *testing.F) string {
	ref := filepath.Join(f.TempDir(), "ref.bin")
	if err := os.WriteFile(ref, make([]byte, 100), 0o644); err != nil {
		f.Fatal(err)
	}
	return ref
}

// within runs f and fails the test if it does not return in time.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

var writeSeeds = [][]byte{
	{0, 1, 8, 0, 1, 8, 0, 0},             // start, session 1, size 8; one inline chunk of 8 at 0, not last
	{0, 1, 8, 0, 1, 8, 0, 1},             // the same, last
	{0, 1, 8, 0, 1, 4, 0, 0, 1, 4, 4, 1}, // two chunks of 4
	{0, 1, 8, 0, 3, 0, 8, 0, 1},          // start, a slot chunk of 8 in slot 0
	{0, 1, 8, 1, 0, 8},                   // a file reference
	{1, 8, 0, 1},                         // a chunk without start
	{0, 1, 8, 0, 1, 16, 0, 1},            // more bytes than the size
	{0, 1, 0xff, 0, 1, 0xfe, 0, 0},       // sizes near 2^64
	{0, 9, 8, 0},                         // unknown session
	{0, 1, 8, 0, 4},                      // an empty message
}

// FuzzServerWrite plays a Write stream against the plugin server: every
// sequence ends with an acknowledgement or an error, never a panic or a
// hang, and a Write the server confirms gave the sink exactly the declared
// bytes.
func FuzzServerWrite(f *testing.F) {
	for _, b := range writeSeeds {
		f.Add(b)
	}
	ref := fuzzRefFile(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		srv, sk := fuzzServer(t, 0)
		msgs := writeScript(b, ref)
		st := &fakeStream[pb.WriteRequest, pb.WriteAck]{ctx: context.Background(), in: msgs}
		var err error
		within(t, 5*time.Second, "Write", func() { err = sinkServer{server: srv}.Write(st) })
		if err != nil {
			return
		}
		start := msgs[0].GetStart()
		if start == nil {
			t.Fatalf("a write without a start message succeeded")
		}
		if got := sk.got["t"]; got != start.Size {
			t.Fatalf("the server confirmed a write of %d bytes but the sink took %d", start.Size, got)
		}
		if len(st.sent) == 0 || !st.sent[len(st.sent)-1].Done {
			t.Fatalf("a successful write ended without a done acknowledgement")
		}
	})
}

// filesScript decodes a WriteFiles message (protocol 1.3, 1.4): up to
// eight tensors "t0", "t1", …, each a file reference, its bytes in an arena
// slot or inline, or, wrongly, nothing at all.
func filesScript(b []byte, file string) *pb.WriteFiles {
	s := &script{b: b}
	files := &pb.WriteFiles{}
	for i := 0; len(s.b) > 0 && i < 8; i++ {
		start := &pb.WriteStart{Session: s.num(), Tensor: fmt.Sprint("t", i), Size: s.num()}
		switch s.byte() % 4 {
		case 0:
			start.File = &pb.FileRef{Path: file, Offset: s.num(), Length: s.num()}
		case 1:
			start.Data = &pb.Chunk{Offset: s.num(), Length: s.num(), Payload: &pb.Chunk_Slot{Slot: uint32(s.num())}, Last: s.byte()%2 == 1}
			if s.byte()%2 == 1 {
				start.Data.SlotOffset = s.num()
			}
		case 2:
			n := s.num()
			start.Data = &pb.Chunk{Offset: s.num(), Length: n, Payload: &pb.Chunk_Inline{Inline: make([]byte, min(n, 256))}, Last: true}
		}
		files.Tensors = append(files.Tensors, start)
	}
	return files
}

var filesSeeds = [][]byte{
	{1, 8, 1, 0, 8, 0, 1},                   // one tensor of 8 bytes in slot 0
	{1, 8, 1, 0, 8, 0, 1, 1, 16},            // at byte 16 of slot 0
	{1, 8, 1, 0, 8, 0, 1, 1, 60},            // past the slot's end
	{1, 8, 1, 0, 8, 0, 1, 1, 0xff},          // at an offset near 2^64
	{1, 8, 1, 0, 8, 0, 1, 0, 1, 4, 0, 0, 4}, // and a file reference of 4
	{1, 64, 1, 0, 64, 3, 1},                 // a whole slot
	{1, 65, 1, 0, 65, 0, 1},                 // more than a slot
	{1, 8, 1, 0, 8, 9, 1},                   // no such slot
	{1, 8, 1, 1, 7, 0, 1},                   // not from the start
	{1, 8, 1, 0, 8, 0, 0},                   // not marked last
	{1, 8, 2, 8, 0},                         // inline
	{1, 8, 2, 0xff, 0},                      // inline, says more than it holds
	{1, 8, 3},                               // neither
	{9, 8, 1, 0, 8, 0, 1},                   // unknown session
	{1, 0xff, 1, 0, 0xff, 0, 1},             // a size near 2^64
}

// FuzzServerWriteFiles plays a WriteFiles message against the plugin
// server's WriteSeries: it ends with an acknowledgement or an error, never a
// panic or a hang; the tensors it counts as written gave the sink exactly
// their declared bytes, and on success it counts them all.
func FuzzServerWriteFiles(f *testing.F) {
	for _, b := range filesSeeds {
		f.Add(b)
	}
	ref := fuzzRefFile(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		srv, sk := fuzzServer(t, 0)
		files := filesScript(b, ref)
		st := &fakeStream[pb.WriteRequest, pb.WriteAck]{ctx: context.Background(), in: []*pb.WriteRequest{{Msg: &pb.WriteRequest_Files{Files: files}}}}
		var err error
		within(t, 5*time.Second, "WriteSeries", func() { err = sinkServer{server: srv}.WriteSeries(st) })
		written := 0
		if n := len(st.sent); n > 0 {
			last := st.sent[n-1]
			written = int(last.Written)
			if last.Done != (err == nil) || written > len(files.Tensors) {
				t.Fatalf("the last acknowledgement %v after error %v, for %d tensors", last, err, len(files.Tensors))
			}
		} else if err == nil {
			t.Fatalf("a message of %d tensors ended without an acknowledgement", len(files.Tensors))
		}
		if err == nil && written != len(files.Tensors) {
			t.Fatalf("%d of %d tensors confirmed without an error", written, len(files.Tensors))
		}
		for _, start := range files.Tensors[:written] {
			if got := sk.got[start.Tensor]; got != start.Size {
				t.Fatalf("%s: confirmed as %d bytes, the sink took %d", start.Tensor, start.Size, got)
			}
			if d := start.Data; d != nil && (d.GetInline() == nil && (d.SlotOffset > fuzzSlotSize || d.Length > fuzzSlotSize-d.SlotOffset) || d.GetInline() != nil && uint64(len(d.GetInline())) != d.Length) {
				t.Fatalf("%s: data %v confirmed", start.Tensor, d)
			}
		}
	})
}

var readSeeds = [][]byte{
	{16, 0, 1, 0, 0, 1, 0},                 // size 16; start inline
	{16, 0, 1, 0, 1, 1, 0, 1, 1, 0},        // start with the arena, grant slot 0
	{16, 0, 1, 0, 1, 1, 0, 1, 2, 0, 9},     // grant slots 0 and 9
	{200, 0, 1, 0, 1, 4, 0, 1, 3, 0, 1, 2}, // a tensor of several slots
	{0, 0, 1, 0, 1, 1, 0, 1, 1, 0},         // an empty tensor
	{16, 1, 1, 0},                          // a grant before the start
	{16, 0, 1, 0, 0, 0xff, 0xfe},           // huge align and max chunk
}

// FuzzServerRead plays a Read stream against the plugin server: the first
// script byte sets the tensor's size. Every sequence ends, without a panic;
// the chunks sent cover the tensor in order, each inside its slot, and an
// inline read that succeeds sends every byte.
func FuzzServerRead(f *testing.F) {
	for _, b := range readSeeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		size := uint64(b[0])
		srv, _ := fuzzServer(t, size)
		msgs := readScript(b[1:])
		st := &fakeStream[pb.ReadRequest, pb.Chunk]{ctx: context.Background(), in: msgs}
		var err error
		within(t, 5*time.Second, "Read", func() { err = sourceServer{server: srv}.Read(st) })
		var off uint64
		for _, c := range st.sent {
			if c.Offset != off {
				t.Fatalf("chunk at offset %d, expected %d", c.Offset, off)
			}
			off += c.Length
			if off > size {
				t.Fatalf("chunks run to %d, past the tensor's %d bytes", off, size)
			}
			if s, ok := c.Payload.(*pb.Chunk_Slot); ok && (s.Slot >= fuzzSlots || c.Length > fuzzSlotSize) {
				t.Fatalf("chunk of %d bytes in slot %d of an arena of %d × %d", c.Length, s.Slot, fuzzSlots, fuzzSlotSize)
			}
			if in, ok := c.Payload.(*pb.Chunk_Inline); ok && uint64(len(in.Inline)) != c.Length {
				t.Fatalf("inline chunk holds %d bytes, says %d", len(in.Inline), c.Length)
			}
		}
		// An inline read sends the whole tensor; an arena read may stop
		// early, without error, when the host stops granting slots (it
		// closed its side: here, when the script runs out).
		if len(msgs) > 0 && err == nil && msgs[0].GetStart() != nil && !msgs[0].GetStart().Arena && off != size {
			t.Fatalf("the read ended without error after %d of %d bytes", off, size)
		}
	})
}

// TestFuzzSeeds keeps testdata/fuzz in step with the seeds above (rewritten
// with -update).
func TestFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for i, b := range manifestSeeds() {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed%d", i), Values: []any{b}})
	}
	fuzzseed.Sync(t, "FuzzManifestFromProto", seeds)
	seeds = nil
	for i, b := range tableSeeds() {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed%d", i), Values: []any{b}})
	}
	fuzzseed.Sync(t, "FuzzParseTensorTable", seeds)
	seeds = nil
	for i, b := range listSeeds() {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed%d", i), Values: []any{b}})
	}
	fuzzseed.Sync(t, "FuzzParsePackedLists", seeds)
	seeds = nil
	for i, s := range configSeeds {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed%d", i), Values: []any{[]byte(s)}})
	}
	fuzzseed.Sync(t, "FuzzConfigDecode", seeds)
	seeds = nil
	for i, b := range writeSeeds {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed%d", i), Values: []any{b}})
	}
	fuzzseed.Sync(t, "FuzzServerWrite", seeds)
	seeds = nil
	for i, b := range filesSeeds {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed%d", i), Values: []any{b}})
	}
	fuzzseed.Sync(t, "FuzzServerWriteFiles", seeds)
	seeds = nil
	for i, b := range readSeeds {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed%d", i), Values: []any{b}})
	}
	fuzzseed.Sync(t, "FuzzServerRead", seeds)
}
