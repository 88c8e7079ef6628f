package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice-ml/sluice/internal/testwait"
	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// recordSink keeps every tensor's bytes; it refuses a tensor called "bad",
// and holds a tensor whose name starts with "gate" until gate is closed.
type recordSink struct {
	mu      sync.Mutex
	got     map[string][]byte
	gate    chan struct{}
	waiting atomic.Int32 // writes held at the gate
}

func (s *recordSink) Plan(ctx context.Context, in *tensor.Manifest) (*SinkPlan, error) {
	return &SinkPlan{}, nil
}
func (s *recordSink) Begin(ctx context.Context, m *tensor.Manifest, _ BeginOptions) error {
	return nil
}
func (s *recordSink) Write(ctx context.Context, name string, data TensorData) error {
	if name == "bad" {
		return errors.New("refusing the tensor called bad")
	}
	if strings.HasPrefix(name, "gate") {
		s.waiting.Add(1)
		<-s.gate
	}
	b, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.got[name] = b
	s.mu.Unlock()
	return nil
}
func (s *recordSink) Commit(ctx context.Context) ([]Artifact, error) { return nil, nil }
func (s *recordSink) Abort(ctx context.Context) error                { return nil }

// streamCount counts the streams a plugin serves, by method, and those
// still open, and the tensors of every WriteFiles message.
type streamCount struct {
	mu     sync.Mutex
	opened map[string]int
	files  []int
	data   int // tensors of WriteFiles messages whose bytes were in a slot
	open   atomic.Int32
}

func (c *streamCount) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	c.mu.Lock()
	c.opened[path.Base(info.FullMethod)]++
	c.mu.Unlock()
	c.open.Add(1)
	defer c.open.Add(-1)
	return handler(srv, countingStream{ServerStream: ss, c: c})
}

// countingStream notes the WriteFiles messages its stream receives.
type countingStream struct {
	grpc.ServerStream
	c *streamCount
}

func (s countingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if req, ok := m.(*pb.WriteRequest); ok && err == nil && req.GetFiles() != nil {
		s.c.mu.Lock()
		s.c.files = append(s.c.files, len(req.GetFiles().Tensors))
		for _, start := range req.GetFiles().Tensors {
			if start.Data != nil {
				s.c.data++
			}
		}
		s.c.mu.Unlock()
	}
	return err
}

func (c *streamCount) fileMessages() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.files)
}

func (c *streamCount) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened[method]
}

// seriesSink serves a recordSink over an in-memory connection, counting
// streams, and opens a session on it.
func seriesSink(t *testing.T) (*rpcClient, *remoteSink, *recordSink, *streamCount) {
	t.Helper()
	return arenaSeriesSink(t, nil)
}

// arenaSeriesSink is seriesSink with an arena both ends share.
func arenaSeriesSink(t *testing.T, arena *Arena) (*rpcClient, *remoteSink, *recordSink, *streamCount) {
	t.Helper()
	rec := &recordSink{got: map[string][]byte{}, gate: make(chan struct{})}
	count := &streamCount{opened: map[string]int{}}
	c, _ := connectArena(t, testPlugin(&hangSource{}, rec), arena, time.Minute, grpc.StreamInterceptor(count.intercept))
	if !c.info.WriteSeries {
		t.Fatal("a plugin of this SDK does not announce WriteSeries")
	}
	sk, err := c.OpenSink(context.Background(), "hang", MustConfig(map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	return c, sk.(*remoteSink), rec, count
}

// patterned returns n bytes that differ from tensor to tensor.
func patterned(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*131 + i*7 + i>>9)
	}
	return b
}

// Hundreds of tensors of every kind a write carries (bytes in chunks of
// more than one message, file references, none at all) cross a few lanes,
// written by six goroutines at once; every byte arrives, no lane is opened
// per tensor, and Commit ends the lanes.
func TestWriteSeriesCarriesManyTensors(t *testing.T) {
	_, sk, rec, count := seriesSink(t)
	writers := writeManyTensors(t, sk, rec)
	if n := count.count("WriteSeries"); n < 1 || n > writers {
		t.Errorf("%d WriteSeries streams for %d writers at once", n, writers)
	}
	if n := count.count("Write"); n != 0 {
		t.Errorf("%d Write streams beside the series", n)
	}
	if _, err := sk.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count.open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := count.open.Load(); n != 0 || len(sk.lanes.idle) != 0 {
		t.Errorf("after Commit, %d streams still open in the plugin, %d lanes kept", n, len(sk.lanes.idle))
	}
}

// writeManyTensors writes hundreds of tensors of every kind through sk
// from several goroutines at once, checks that rec got every byte, and
// returns how many goroutines wrote.
func writeManyTensors(t *testing.T, sk *remoteSink, rec *recordSink) int {
	t.Helper()
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "refs")
	content := patterned(-1, 1<<16)
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	const tensors, writers = 300, 6
	want := map[string][]byte{}
	data := make([]func() TensorData, tensors)
	for i := range tensors {
		name := fmt.Sprint("t", i)
		switch i % 3 {
		case 0:
			n := (i * 977) % 5000
			if i%30 == 0 {
				n = maxInline*2 + 3 // three inline chunks
			}
			b := patterned(i, n)
			want[name] = b
			data[i] = func() TensorData { return BytesData(b) }
		case 1:
			off, n := uint64(i*101%4096), uint64(i*53%9000)
			want[name] = content[off : off+n]
			data[i] = func() TensorData { return FileData(tensor.FileRef{Path: file, Offset: off, Length: n}) }
		default:
			want[name] = []byte{}
			data[i] = func() TensorData { return BytesData(nil) }
		}
	}
	var next atomic.Int32
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= tensors {
					return
				}
				if err := sk.Write(ctx, fmt.Sprint("t", i), data[i]()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for name, b := range want {
		if got, ok := rec.got[name]; !ok || !bytes.Equal(got, b) {
			t.Errorf("%s: %d bytes arrived (present %v), want %d", name, len(got), ok, len(b))
		}
	}
	return writers
}

// shortData says it holds more bytes than it gives.
type shortData struct {
	io.Reader
	size uint64
}

func (d shortData) Size() uint64                 { return d.size }
func (d shortData) File() (tensor.FileRef, bool) { return tensor.FileRef{}, false }

// A tensor the sink refuses, or whose data runs out early, fails alone: its
// lane is dropped (it may be in the middle of the tensor), and the next
// write opens another.
func TestWriteSeriesFailureEndsOnlyItsLane(t *testing.T) {
	_, sk, rec, count := seriesSink(t)
	failAlone(t, sk, rec)
	if n := count.count("WriteSeries"); n != 3 {
		t.Errorf("%d lanes, want 3: one, another after each failure", n)
	}
}

// failAlone writes a tensor the sink refuses and one whose data runs out
// early between good ones, and checks that only those two failed.
func failAlone(t *testing.T, sk *remoteSink, rec *recordSink) {
	t.Helper()
	ctx := context.Background()
	write := func(name string, data TensorData) error { return sk.Write(ctx, name, data) }
	if err := write("a", BytesData([]byte("first"))); err != nil {
		t.Fatal(err)
	}
	if err := write("bad", BytesData([]byte("refused"))); err == nil || !strings.Contains(err.Error(), "refusing the tensor called bad") {
		t.Errorf("the refused tensor: %v", err)
	}
	if err := write("b", BytesData([]byte("after the refusal"))); err != nil {
		t.Fatal(err)
	}
	err := write("short", shortData{Reader: bytes.NewReader(make([]byte, 50)), size: 100})
	if err == nil || !strings.Contains(err.Error(), "ended after 50 of its 100 bytes") {
		t.Errorf("the short tensor: %v", err)
	}
	if err := write("c", BytesData([]byte("after the short one"))); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "first", "b": "after the refusal", "c": "after the short one"} {
		if got := string(rec.got[name]); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if _, ok := rec.got["short"]; ok {
		t.Error("the short tensor was written")
	}
}

// The plugin refuses a series whose chunks do not end where the tensor
// does: a chunk marked last too early, one past the end, a last one not
// marked. Each would otherwise run into the next tensor's messages.
func TestWriteSeriesRefusesMisframedChunks(t *testing.T) {
	c, sk, _, _ := seriesSink(t)
	inline := func(off, n uint64, last bool) *pb.WriteRequest {
		return &pb.WriteRequest{Msg: &pb.WriteRequest_Chunk{Chunk: &pb.Chunk{
			Offset: off, Length: n, Payload: &pb.Chunk_Inline{Inline: make([]byte, n)}, Last: last,
		}}}
	}
	for _, tc := range []struct {
		name   string
		chunks []*pb.WriteRequest
	}{
		{"last too early", []*pb.WriteRequest{inline(0, 4, true)}},
		{"past the end", []*pb.WriteRequest{inline(0, 12, true)}},
		{"last not marked", []*pb.WriteRequest{inline(0, 4, false), inline(4, 6, false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := openSeries(t, c)
			start := &pb.WriteRequest{Msg: &pb.WriteRequest_Start{Start: &pb.WriteStart{Session: sk.session, Tensor: "x", Size: 10}}}
			for _, m := range append([]*pb.WriteRequest{start}, tc.chunks...) {
				if err := stream.Send(m); err != nil {
					break // the plugin ended the stream; Recv says why
				}
			}
			for {
				ack, err := stream.Recv()
				if err != nil {
					if err == io.EOF || !strings.Contains(err.Error(), "marked last") {
						t.Errorf("the stream ended with %v, want the framing named", err)
					}
					return
				}
				if ack.Done {
					t.Fatal("the misframed tensor was confirmed")
				}
			}
		})
	}
}

// openSeries opens a WriteSeries stream that ends with the test, or after
// ten seconds.
func openSeries(t *testing.T, c *rpcClient) pb.Sink_WriteSeriesClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	stream, err := c.sink.WriteSeries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// To a plugin that does not announce WriteSeries (protocol 1.2 and older),
// the host opens a Write stream per tensor.
func TestWriteWithoutSeriesOpensAStreamPerTensor(t *testing.T) {
	c, sk, rec, count := seriesSink(t)
	c.info.WriteSeries = false
	for i := range 5 {
		if err := sk.Write(context.Background(), fmt.Sprint("t", i), BytesData(patterned(i, 100*i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if got := rec.got[fmt.Sprint("t", i)]; !bytes.Equal(got, patterned(i, 100*i)) {
			t.Errorf("t%d: %d bytes", i, len(got))
		}
	}
	if w, s := count.count("Write"), count.count("WriteSeries"); w != 5 || s != 0 {
		t.Errorf("%d Write and %d WriteSeries streams for 5 tensors, want 5 and 0", w, s)
	}
}

// gatheredWrites runs writes of small tensors, each of the five bytes
// "bytes", and keeps their errors by name: file references to a file of
// them, chunks of them in slots of an arena, or chunks on the heap.
type gatheredWrites struct {
	kind   string // "files", "slots", "pieces" or "heap"
	file   string
	arena  *Arena
	pool   *Pool   // for "slots": the writes' bytes are in its slots
	pieces *Pieces // for "pieces": the writes' bytes are in pieces of slots
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   map[string]error
}

// behindTwoMessages starts writes "gate0" and "gate1" of the kind of
// gatheredWrites, which the sink holds until its gate is closed: two
// messages in flight, every sender busy, so the writes started next wait.
// Writes of slots carry slots of a pool of 16 of an arena's.
func behindTwoMessages(t *testing.T, kind string) (*remoteSink, *recordSink, *streamCount, *gatheredWrites) {
	t.Helper()
	arena := testArena(t, kind == "slots" || kind == "pieces")
	_, sk, rec, count := arenaSeriesSink(t, arena)
	w := &gatheredWrites{kind: kind, file: filepath.Join(t.TempDir(), "refs"), arena: arena, errs: map[string]error{}}
	if err := os.WriteFile(w.file, []byte("bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if kind == "pieces" {
		w.pieces = NewPieces(arena)
	}
	if kind == "slots" {
		pool, err := arena.Reserve(context.Background(), 16)
		if err != nil {
			t.Fatal(err)
		}
		w.pool = pool
	}
	w.start(t, sk, held(rec), "gate0", "gate1")
	return sk, rec, count, w
}

// data returns a write's tensor: a file reference, or its bytes in a slot.
func (w *gatheredWrites) data(t *testing.T) TensorData {
	switch w.kind {
	case "slots":
		return slotData(t, w.pool, []byte("bytes"))
	case "pieces":
		c, ok := w.pieces.TryGet(5)
		if !ok {
			t.Fatal("no piece")
		}
		copy(c.Data, "bytes")
		return NewChunkData(context.Background(), 5, SingleChunk(c), nil)
	case "heap":
		return NewChunkData(context.Background(), 5, SingleChunk(HeapChunk([]byte("bytes"), 0)), nil)
	}
	return FileData(tensor.FileRef{Path: w.file, Offset: 0, Length: 5})
}

// slotData returns b as a tensor whose only chunk is in a slot of pool.
func slotData(t *testing.T, pool *Pool, b []byte) TensorData {
	t.Helper()
	c, ok := pool.TryGet()
	if !ok {
		t.Fatal("the pool has no free slot")
	}
	c.Data = c.Data[:copy(c.Data, b)]
	return NewChunkData(context.Background(), uint64(len(b)), SingleChunk(c), nil)
}

// start starts the write of each name once the one before it has got as
// far as arrived says.
func (w *gatheredWrites) start(t *testing.T, sk *remoteSink, arrived func() int, names ...string) {
	t.Helper()
	for _, name := range names {
		before := arrived()
		data := w.data(t)
		w.wg.Go(func() {
			err := sk.Write(context.Background(), name, data)
			w.mu.Lock()
			w.errs[name] = err
			w.mu.Unlock()
		})
		testwait.Until(t, "the write arriving", func() bool { return arrived() > before })
	}
}

// wait waits for the writes and checks that every slot came back.
func (w *gatheredWrites) wait(t *testing.T) {
	t.Helper()
	w.wg.Wait()
	if w.pool != nil {
		if n := len(w.pool.unheld); n != w.pool.Size() {
			t.Errorf("%d of the pool's %d slots came back", n, w.pool.Size())
		}
	}
	if w.pieces != nil {
		if n := w.arena.Free(); n != w.arena.Slots() {
			t.Errorf("%d of the arena's %d slots are free after the writes of pieces", n, w.arena.Slots())
		}
	}
}

// queued counts the writes of file references waiting for a message.
func queued(sk *remoteSink) func() int {
	return func() int {
		sk.batches.mu.Lock()
		defer sk.batches.mu.Unlock()
		return len(sk.batches.queue)
	}
}

// held counts the writes the sink holds at its gate.
func held(rec *recordSink) func() int { return func() int { return int(rec.waiting.Load()) } }

// Small writes that come while messages are in flight wait, and go out
// together in the next message: of file references, and (protocol 1.4) of
// tensors whose bytes are whole in one chunk, in an arena slot or a piece of
// one (whose slots come back), or on the heap (carried inline).
func TestSmallWritesGatherIntoMessages(t *testing.T) {
	for _, kind := range []string{"files", "slots", "pieces", "heap"} {
		t.Run(kind, func(t *testing.T) {
			sk, rec, count, w := behindTwoMessages(t, kind)
			names := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"}
			w.start(t, sk, queued(sk), names...)
			close(rec.gate)
			w.wait(t)
			for _, name := range append([]string{"gate0", "gate1"}, names...) {
				if err := w.errs[name]; err != nil || string(rec.got[name]) != "bytes" {
					t.Errorf("%s: %v, %q written", name, err, rec.got[name])
				}
			}
			if got := count.fileMessages(); !slices.Equal(got, []int{1, 1, 10}) {
				t.Errorf("WriteFiles messages of %v tensors, want [1 1 10]", got)
			}
			if want := map[string]int{"files": 0, "slots": 12, "pieces": 12, "heap": 12}[kind]; count.data != want {
				t.Errorf("%d tensors went in slots, want %d", count.data, want)
			}
		})
	}
}

// testArena returns an arena of 32 slots of 4 KiB, or, when !want, none.
func testArena(t *testing.T, want bool) *Arena {
	t.Helper()
	if !want {
		return nil
	}
	return newTestArena(t, 32, 4096)
}

// When a tensor of a message fails, it alone reports the failure: those
// before it were written, and those after it go out in another message.
func TestSmallWriteFailureInAMessageIsItsTensorsAlone(t *testing.T) {
	for _, kind := range []string{"files", "slots", "pieces", "heap"} {
		t.Run(kind, func(t *testing.T) {
			sk, rec, count, w := behindTwoMessages(t, kind)
			w.start(t, sk, queued(sk), "a", "b", "bad", "c", "d")
			close(rec.gate)
			w.wait(t)
			for _, name := range []string{"gate0", "gate1", "a", "b", "c", "d"} {
				if err := w.errs[name]; err != nil || string(rec.got[name]) != "bytes" {
					t.Errorf("%s: %v, %q written", name, err, rec.got[name])
				}
			}
			if err := w.errs["bad"]; err == nil || !strings.Contains(err.Error(), "refusing the tensor called bad") {
				t.Errorf("bad: %v", err)
			}
			if got := count.fileMessages(); !slices.Equal(got, []int{1, 1, 5, 2}) {
				t.Errorf("WriteFiles messages of %v tensors, want [1 1 5 2]", got)
			}
		})
	}
}

// To a plugin that does not announce write_data (protocol 1.3 and older),
// or when a small tensor's bytes are not whole in one slot, each tensor is
// written on its own, and its slots come back all the same.
func TestSlotWritesNotGatheredWriteOneByOne(t *testing.T) {
	arena := testArena(t, true)
	c, sk, rec, count := arenaSeriesSink(t, arena)
	pool, err := arena.Reserve(context.Background(), 8)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Two chunks of one tensor, each in a slot.
	first, second := patterned(1, 3000), patterned(2, 1000)
	c1, _ := pool.TryGet()
	c1.Data = c1.Data[:copy(c1.Data, first)]
	c2, _ := pool.TryGet()
	c2.Data = c2.Data[:copy(c2.Data, second)]
	c2.Offset = 3000
	split := NewChunkData(ctx, 4000, &putBack{first: c1, rest: NewChunkData(ctx, 1000, SingleChunk(c2), nil)}, nil)
	if err := sk.Write(ctx, "split", split); err != nil {
		t.Fatal(err)
	}
	if want := append(first, second...); !bytes.Equal(rec.got["split"], want) {
		t.Errorf("split: %d bytes arrived, want %d", len(rec.got["split"]), len(want))
	}
	c.info.WriteData = false
	if err := sk.Write(ctx, "old", slotData(t, pool, []byte("to an older plugin"))); err != nil {
		t.Fatal(err)
	}
	if got := string(rec.got["old"]); got != "to an older plugin" {
		t.Errorf("old: %q arrived", got)
	}
	if got := count.fileMessages(); len(got) != 0 {
		t.Errorf("WriteFiles messages of %v tensors, want none", got)
	}
	if n := len(pool.unheld); n != pool.Size() {
		t.Errorf("%d of the pool's %d slots came back", n, pool.Size())
	}
}

// The plugin refuses a WriteFiles tensor whose data is not all of its bytes
// in one arena slot, naming the tensor, and confirms none of it.
func TestWriteFilesRefusesMalformedData(t *testing.T) {
	arena := testArena(t, true)
	c, sk, _, _ := arenaSeriesSink(t, arena)
	slot := func(off, n uint64, last bool, s uint32) *pb.Chunk {
		return &pb.Chunk{Offset: off, Length: n, Payload: &pb.Chunk_Slot{Slot: s}, Last: last}
	}
	for _, tc := range []struct {
		name string
		data *pb.Chunk
		want string
	}{
		{"not from the start", slot(1, 9, true, 0), "must be one chunk of it all"},
		{"short", slot(0, 9, true, 0), "must be one chunk of it all"},
		{"not last", slot(0, 10, false, 0), "must be one chunk of it all"},
		{"inline of another length", &pb.Chunk{Length: 10, Payload: &pb.Chunk_Inline{Inline: make([]byte, 9)}, Last: true}, "holds 9 bytes"},
		{"no payload", &pb.Chunk{Length: 10, Last: true}, "without payload"},
		{"no such slot", slot(0, 10, true, 99), "slot"},
		{"past the slot's end", &pb.Chunk{Length: 10, Payload: &pb.Chunk_Slot{Slot: 0}, SlotOffset: 4090, Last: true}, "at byte 4090 of a slot of 4096"},
		{"inline at an offset", &pb.Chunk{Length: 10, Payload: &pb.Chunk_Inline{Inline: make([]byte, 10)}, SlotOffset: 8, Last: true}, "slot offset 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := openSeries(t, c)
			files := &pb.WriteFiles{Tensors: []*pb.WriteStart{{Session: sk.session, Tensor: "x", Size: 10, Data: tc.data}}}
			if err := stream.Send(&pb.WriteRequest{Msg: &pb.WriteRequest_Files{Files: files}}); err != nil {
				t.Fatal(err)
			}
			for {
				ack, err := stream.Recv()
				if err != nil {
					if err == io.EOF || !strings.Contains(err.Error(), `tensor "x"`) || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("the stream ended with %v, want the tensor and %q named", err, tc.want)
					}
					return
				}
				if ack.Done || ack.Written != 0 {
					t.Fatalf("the malformed tensor was confirmed: %v", ack)
				}
			}
		})
	}
}

// A tensor of more than gatherBelow bytes is written on its own, not in a
// WriteFiles message: the plugin writes a message's tensors one after
// another, and large copies gain from going on at once.
func TestLargeFileWritesAreNotGathered(t *testing.T) {
	_, sk, rec, count := seriesSink(t)
	file := filepath.Join(t.TempDir(), "big")
	content := patterned(3, gatherBelow+1)
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sk.Write(context.Background(), "big", FileData(tensor.FileRef{Path: file, Length: uint64(len(content))})); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.got["big"], content) {
		t.Errorf("%d bytes written, want %d", len(rec.got["big"]), len(content))
	}
	if got := count.fileMessages(); len(got) != 0 || count.count("WriteSeries") != 1 {
		t.Errorf("WriteFiles messages %v and %d series for one large tensor, want none and 1", got, count.count("WriteSeries"))
	}
}

// The references of one message to one file are checked against its size,
// which is read once: one past the end fails, naming the file, after those
// before it were written.
func TestWriteFilesChecksEveryReferenceOfAFile(t *testing.T) {
	c, sk, rec, _ := seriesSink(t)
	file := filepath.Join(t.TempDir(), "refs")
	if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := func(name string, off, n uint64) *pb.WriteStart {
		return &pb.WriteStart{Session: sk.session, Tensor: name, Size: n, File: &pb.FileRef{Path: file, Offset: off, Length: n}}
	}
	stream := openSeries(t, c)
	files := &pb.WriteFiles{Tensors: []*pb.WriteStart{ref("a", 0, 4), ref("b", 4, 6), ref("c", 8, 4)}}
	if err := stream.Send(&pb.WriteRequest{Msg: &pb.WriteRequest_Files{Files: files}}); err != nil {
		t.Fatal(err)
	}
	var written uint32
	for {
		ack, err := stream.Recv()
		if err != nil {
			if !strings.Contains(err.Error(), "lies past the end of "+file) {
				t.Errorf("the stream ended with %v, want the reference past the file's end named", err)
			}
			break
		}
		if ack.Done {
			t.Fatal("a reference past the file's end was confirmed")
		}
		written = ack.Written
	}
	if written != 2 || string(rec.got["a"]) != "0123" || string(rec.got["b"]) != "456789" {
		t.Errorf("%d written before the bad one, a = %q, b = %q", written, rec.got["a"], rec.got["b"])
	}
	if _, ok := rec.got["c"]; ok {
		t.Error("the reference past the file's end was written")
	}
}

// oneChunk yields a chunk and then io.EOF, as a plugin source's reader does
// (it is not SingleChunk, which a write may gather whole).
type oneChunk struct{ c *Chunk }

func (o *oneChunk) NextChunk(context.Context) (*Chunk, error) {
	c := o.c
	if c == nil {
		return nil, io.EOF
	}
	o.c = nil
	return c, nil
}

func (o *oneChunk) Close() error {
	if o.c != nil {
		o.c.Release()
	}
	return nil
}

// slotSeries is arenaSeriesSink over a new arena, with a pool of n of its
// slots for the tests' chunks.
func slotSeries(t *testing.T, n int) (*remoteSink, *recordSink, *streamCount, *Pool) {
	t.Helper()
	arena := testArena(t, true)
	_, sk, rec, count := arenaSeriesSink(t, arena)
	pool, err := arena.Reserve(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return sk, rec, count, pool
}

// chunkInSlot returns b in a slot of pool, taken as a plugin source's
// reader takes one (Get).
func chunkInSlot(t *testing.T, pool *Pool, b []byte) *Chunk {
	t.Helper()
	c, err := pool.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.Data = c.Data[:copy(c.Data, b)]
	return c
}

// TestWriteSeriesEmptyTensorFromASlot is a regression test: a plugin
// source gives a tensor of 0 bytes as one empty chunk in an arena slot, and
// the host passed it on to a sink's series, where a 0-byte tensor has no
// chunk. The plugin took that chunk for the next tensor's first message
// ("write stream must begin with a start message"), which failed the next
// write on the lane; a CI run of a damaged PyTorch file hit it.
func TestWriteSeriesEmptyTensorFromASlot(t *testing.T) {
	sk, rec, count, pool := slotSeries(t, 2)
	ctx := context.Background()
	for i := range 3 {
		c := chunkInSlot(t, pool, nil)
		if err := sk.Write(ctx, fmt.Sprint("empty", i), NewChunkData(ctx, 0, &oneChunk{c}, nil)); err != nil {
			t.Fatalf("the empty tensor: %v", err)
		}
		after := fmt.Sprint("after", i)
		if err := sk.Write(ctx, after, BytesData([]byte(after))); err != nil {
			t.Fatalf("the tensor after the empty one: %v", err)
		}
		if got := string(rec.got[after]); got != after {
			t.Errorf("%s: %q", after, got)
		}
	}
	if n := count.count("WriteSeries"); n != 1 {
		t.Errorf("%d lanes, want 1", n)
	}
	if a := pool.Arena(); a.Free() != a.Slots()-2 {
		t.Errorf("%d slots free, want all but the pool's 2", a.Free())
	}
}

// A tensor whose chunks hold more bytes than its size is refused before
// the excess is sent, and the next write goes on.
func TestWriteSeriesRefusesDataPastTheSize(t *testing.T) {
	sk, rec, _, pool := slotSeries(t, 1)
	ctx := context.Background()
	c := chunkInSlot(t, pool, []byte("five!"))
	err := sk.Write(ctx, "long", NewChunkData(ctx, 3, &oneChunk{c}, nil))
	if err == nil || !strings.Contains(err.Error(), "runs past its 3 bytes") {
		t.Errorf("a tensor of 3 bytes given 5: %v", err)
	}
	if err := sk.Write(ctx, "next", BytesData([]byte("next"))); err != nil || string(rec.got["next"]) != "next" {
		t.Errorf("the write after: %v, %q", err, rec.got["next"])
	}
	if _, ok := rec.got["long"]; ok {
		t.Error("the long tensor was written")
	}
}
