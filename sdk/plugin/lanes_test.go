//go:build unix

package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
)

// laneCount counts the write lanes a plugin served and those still open,
// and the direct lanes it served.
type laneCount struct {
	served atomic.Int32
	open   atomic.Int32
	direct atomic.Int32
}

// laneSink serves sink over an in-memory gRPC connection and a real lane
// socket, as a plugin launched with an arena is, and opens a session on it.
func laneSink(t *testing.T, sink Sink) (*remoteSink, *streamCount, *laneCount) {
	t.Helper()
	sk, count, lanes, _ := laneSinkWithin(t, sink, time.Minute)
	return sk, count, lanes
}

// laneSinkWithin is laneSink whose plugin may keep the host waiting for
// timeout; it also returns how many times the host stopped it as hung.
func laneSinkWithin(t *testing.T, sink Sink, timeout time.Duration) (*remoteSink, *streamCount, *laneCount, *atomic.Int32) {
	t.Helper()
	count := &streamCount{opened: map[string]int{}}
	c, srv, hangs := serveArena(t, testPlugin(&hangSource{}, sink), nil, timeout, grpc.StreamInterceptor(count.intercept))
	host, theirs, err := newLaneSocket()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	sock, err := unixConn(theirs, "the plugin's lane socket")
	if err != nil {
		t.Fatal(err)
	}
	lanes := &laneCount{}
	serve := sinkServer{server: srv}
	go acceptLanes(sock, func(kind byte, conn net.Conn) {
		if kind == laneDirect {
			lanes.direct.Add(1)
		} else {
			lanes.served.Add(1)
		}
		lanes.open.Add(1)
		defer lanes.open.Add(-1)
		serve.serveLaneOf(kind, conn)
	})
	c.lanes, c.direct = host, true
	sk, err := c.OpenSink(context.Background(), "hang", MustConfig(map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	return sk.(*remoteSink), count, lanes, hangs
}

// The watchdog stops a plugin that keeps a write over a lane waiting: one
// whose bytes it never reads (the host blocks sending them, the socket full),
// and one gathered into a message it never acknowledges.
func TestHungPluginIsStoppedOverALane(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		data TensorData
	}{
		{"sent in chunks", BytesData(bytes.Repeat([]byte{1}, 8<<20))},
		{"gathered", BytesData([]byte("small"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sk, count, lanes, hangs := laneSinkWithin(t, &slowSink{never: true}, timeout)
			began := time.Now()
			err := sk.Write(context.Background(), "t", tc.data)
			wantHang(t, "write", err, hangs, began, timeout)
			if lanes.served.Load() != 1 || count.count("WriteSeries") != 0 {
				t.Errorf("%d lanes and %d gRPC streams, want the write on a lane", lanes.served.Load(), count.count("WriteSeries"))
			}
		})
	}
}

// waitLanesClosed waits up to five seconds for the plugin to end its lanes.
func (l *laneCount) waitClosed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for l.open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := l.open.Load(); n != 0 {
		t.Errorf("%d lanes still open in the plugin", n)
	}
}

// Hundreds of tensors of every kind cross a few write lanes, and none goes
// over gRPC; Commit ends the lanes in both processes.
func TestWriteLanesCarryManyTensors(t *testing.T) {
	rec := &recordSink{got: map[string][]byte{}, gate: make(chan struct{})}
	sk, count, lanes := laneSink(t, rec)
	writers := writeManyTensors(t, sk, rec)
	if n := lanes.served.Load(); n < 1 || int(n) > writers {
		t.Errorf("%d lanes for %d writers at once", n, writers)
	}
	if n, m := count.count("WriteSeries"), count.count("Write"); n+m != 0 {
		t.Errorf("%d WriteSeries and %d Write streams over gRPC beside the lanes", n, m)
	}
	if _, err := sk.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	lanes.waitClosed(t)
	if n := len(sk.lanes.idle); n != 0 {
		t.Errorf("after Commit, %d lanes kept", n)
	}
}

// A tensor that fails ends its lane alone, with the sink's own words.
func TestWriteLaneFailureEndsOnlyItsLane(t *testing.T) {
	rec := &recordSink{got: map[string][]byte{}, gate: make(chan struct{})}
	sk, _, lanes := laneSink(t, rec)
	failAlone(t, sk, rec)
	if n := lanes.served.Load(); n != 3 {
		t.Errorf("%d lanes, want 3: one, another after each failure", n)
	}
}

// fullSink runs out of space on the tensor called "full".
type fullSink struct{ *recordSink }

func (s fullSink) Write(ctx context.Context, name string, data TensorData) error {
	if name == "full" {
		return &atomicfile.NoSpaceError{Path: "/out/model.gguf", Needed: 12345, Err: syscall.ENOSPC}
	}
	return s.recordSink.Write(ctx, name, data)
}

// The status a lane ends with keeps what gRPC's would: the host sees the
// sink's typed error, in a message of many tensors and in a tensor of
// chunks alike.
func TestWriteLaneCarriesTheSinksError(t *testing.T) {
	rec := &recordSink{got: map[string][]byte{}, gate: make(chan struct{})}
	sk, _, _ := laneSink(t, fullSink{rec})
	for _, data := range []TensorData{
		BytesData([]byte("gathered into a message")),
		BytesData(bytes.Repeat([]byte{7}, 3*maxInline+1)), // chunks of its own
	} {
		err := sk.Write(context.Background(), "full", data)
		var ns *atomicfile.NoSpaceError
		if !errors.As(err, &ns) || ns.Path != "/out/model.gguf" || ns.Needed != 12345 || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("a write of %d bytes: %v (%T), want the sink's *NoSpaceError", data.Size(), err, err)
		}
	}
}

// A write the host gives up on (its context ends) returns at once, though
// the plugin is busy, with the error it has over gRPC; the plugin reads the
// closed lane as a cancellation and keeps nothing of the tensor.
func TestWriteLaneCanceledByTheHost(t *testing.T) {
	var errs []string
	for _, lane := range []bool{false, true} {
		rec := &recordSink{got: map[string][]byte{}, gate: make(chan struct{})}
		var sk *remoteSink
		var waitClosed func(*testing.T)
		if lane {
			var lanes *laneCount
			sk, _, lanes = laneSink(t, rec)
			waitClosed = lanes.waitClosed
		} else {
			var count *streamCount
			_, sk, rec, count = seriesSink(t)
			waitClosed = func(t *testing.T) {
				deadline := time.Now().Add(5 * time.Second)
				for count.open.Load() > 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}
		errs = append(errs, cancelGatedWrite(t, sk, rec, waitClosed))
	}
	if errs[0] != errs[1] {
		t.Errorf("a canceled write fails with %q over a lane and %q over gRPC", errs[1], errs[0])
	}
}

// cancelGatedWrite cancels a write the plugin holds at its gate and returns
// the write's error.
func cancelGatedWrite(t *testing.T, sk *remoteSink, rec *recordSink, waitClosed func(*testing.T)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sk.Write(ctx, "gate", BytesData(bytes.Repeat([]byte{1}, 3*maxInline))) }()
	for rec.waiting.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	var err error
	select {
	case err = <-done:
		if err == nil || errors.Is(err, ErrPluginExited) {
			t.Errorf("the canceled write: %v, want its cancellation", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the canceled write did not return")
	}
	close(rec.gate)
	waitClosed(t)
	if _, ok := rec.got["gate"]; ok {
		t.Error("the plugin kept the tensor of a canceled write")
	}
	if err := sk.Write(context.Background(), "after", BytesData([]byte("x"))); err != nil || string(rec.got["after"]) != "x" {
		t.Errorf("a write after the cancellation: %v, %q", err, rec.got["after"])
	}
	return fmt.Sprint(err)
}

// The plugin's end of a lane refuses frames it cannot take — too long, cut
// short, of no kind it knows, that do not decode — with an error, and
// reads an end of requests as io.EOF.
func TestLaneServerStreamReadsFrames(t *testing.T) {
	frame := func(kind byte, payload ...byte) []byte {
		n := len(payload) + 1
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24), kind}, payload...)
	}
	for _, tc := range []struct {
		name  string
		bytes []byte
		want  string // "" for io.EOF after the request
	}{
		{"a request, then the end", append(frame('m'), frame('e')...), ""},
		{"too long", []byte{0xff, 0xff, 0xff, 0xff, 'm'}, "a frame of 4294967295 bytes"},
		{"empty", []byte{0, 0, 0, 0}, "a frame of 0 bytes"},
		{"cut short", []byte{9, 0, 0, 0, 'm', 1}, "cut short"},
		{"of no kind", frame('x'), `kind 'x'`},
		{"not a request", frame('m', 0xff, 0xff), "does not decode"},
		{"closed without its end", frame('m'), "canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, plugin := net.Pipe()
			go func() { host.Write(tc.bytes); host.Close() }()
			ctx, cancel := context.WithCancel(context.Background())
			s := &laneServerStream{l: newLaneConn(plugin), ctx: ctx, cancel: cancel}
			var last error
			for i := 0; i < 3; i++ {
				if _, last = s.Recv(); last != nil {
					break
				}
			}
			switch {
			case tc.want == "" && last != io.EOF:
				t.Errorf("got %v, want io.EOF", last)
			case tc.want != "" && (last == nil || !strings.Contains(last.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", last, tc.want)
			}
		})
	}
}

// FuzzServeLane plays arbitrary bytes as the host's end of a write lane
// against the plugin's: it ends, never panics nor hangs, and what it sends
// back is whole frames, acknowledgements that decode, and one status frame
// last.
func FuzzServeLane(f *testing.F) {
	frame := func(kind byte, payload []byte) []byte {
		n := len(payload) + 1
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24), kind}, payload...)
	}
	for _, seed := range writeSeeds {
		start, _ := proto.Marshal(&pb.WriteRequest{Msg: &pb.WriteRequest_Start{Start: &pb.WriteStart{Session: 1, Tensor: "t", Size: uint64(len(seed))}}})
		chunk, _ := proto.Marshal(&pb.WriteRequest{Msg: &pb.WriteRequest_Chunk{Chunk: &pb.Chunk{Length: uint64(len(seed)), Payload: &pb.Chunk_Inline{Inline: seed}, Last: true}}})
		f.Add(append(append(frame('m', start), frame('m', chunk)...), frame('e', nil)...))
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		srv, _ := fuzzServer(t, 0)
		out := serveLaneBytes(t, b, func(c *net.UnixConn) { serveLane(c, sinkServer{server: srv}) })
		checkLaneFrames(t, out, func() proto.Message { return &pb.WriteAck{} })
	})
}

// serveLaneBytes sends b down a new lane as the host, closes the host's
// side, serves the plugin's end with serve and returns all the plugin
// sent; serve must return within five seconds.
func serveLaneBytes(t *testing.T, b []byte, serve func(*net.UnixConn)) []byte {
	t.Helper()
	a, p, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	host, err := unixConn(a, "the host's end")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	plugin, err := unixConn(p, "the plugin's end")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		host.Write(b)
		host.CloseWrite()
	}()
	back := make(chan []byte, 1)
	go func() {
		out, _ := io.ReadAll(host)
		back <- out
	}()
	within(t, 5*time.Second, "serving the lane", func() { serve(plugin) })
	return <-back
}

// checkLaneFrames requires out to be whole frames from a plugin: messages
// that decode as what msg makes, then exactly one status that decodes.
func checkLaneFrames(t *testing.T, out []byte, msg func() proto.Message) {
	t.Helper()
	l := newLaneConn(&readOnlyConn{Reader: bytes.NewReader(out)})
	hashedTo := map[uint32]uint64{} // a direct lane's DirectHashTo frames (1.9)
	for statuses := 0; ; {
		kind, payload, err := l.readFrame()
		if err == io.EOF {
			if statuses != 1 {
				t.Fatalf("the lane ended with %d status frames, want 1", statuses)
			}
			return
		}
		if err != nil {
			t.Fatalf("the plugin sent a malformed frame: %v", err)
		}
		if statuses > 0 {
			t.Fatalf("a frame of kind %q after the status", kind)
		}
		switch kind {
		case frameMessage:
			if err := proto.Unmarshal(payload, msg()); err != nil {
				t.Fatalf("a message that does not decode: %v", err)
			}
		case frameStatus:
			if err := proto.Unmarshal(payload, &spb.Status{}); err != nil {
				t.Fatalf("a status that does not decode: %v", err)
			}
			statuses++
		case frameHashTo:
			h := &pb.DirectHashTo{}
			if err := proto.Unmarshal(payload, h); err != nil {
				t.Fatalf("a DirectHashTo that does not decode: %v", err)
			}
			if prev, ok := hashedTo[h.File]; ok && h.End <= prev {
				t.Fatalf("file %d final up to %d, after up to %d", h.File, h.End, prev)
			}
			hashedTo[h.File] = h.End
		default:
			t.Fatalf("a frame of kind %q", kind)
		}
	}
}

// readOnlyConn is a net.Conn that only reads, from Reader.
type readOnlyConn struct {
	net.Conn
	io.Reader
}

func (c *readOnlyConn) Read(p []byte) (int, error) { return c.Reader.Read(p) }

// A frame that claims 200 MiB and brings 3 bytes costs the reader what
// arrived and frameAhead more (a buffer for a frame of up to a MiB at
// once), not what was claimed.
func TestLaneFrameAllocatesWhatArrives(t *testing.T) {
	host, plugin := net.Pipe()
	go func() {
		host.Write([]byte{0, 0, 0x80, 0x0c, 'm', 1, 2}) // a frame of 0x0c800000 bytes (200 MiB), then the end
		host.Close()
	}()
	l := newLaneConn(plugin)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := l.readFrame()
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "cut short after 3") {
		t.Errorf("got %v, want the frame cut short after 3 bytes", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > frameAhead+16<<10 {
		t.Errorf("reading 3 bytes of a frame allocated %d bytes", grown)
	}
}

// A lane keeps no buffer of more than a MiB past the frame that needed it,
// in either direction: frames of megabytes are rare, lanes live for the
// session.
func TestLaneKeepsNoLargeBuffer(t *testing.T) {
	host, plugin := net.Pipe()
	defer host.Close()
	defer plugin.Close()
	w, r := newLaneConn(host), newLaneConn(plugin)
	big := &pb.WriteRequest{Msg: &pb.WriteRequest_Chunk{Chunk: &pb.Chunk{Payload: &pb.Chunk_Inline{Inline: make([]byte, 3<<20)}}}}
	errs := make(chan error, 1)
	go func() { errs <- w.writeFrame(frameMessage, big) }()
	kind, payload, err := r.readFrame()
	if err != nil || kind != frameMessage || len(payload) < 3<<20 {
		t.Fatalf("read a frame of kind %q, %d bytes: %v", kind, len(payload), err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if cap(w.wbuf) > laneBufferKept || cap(r.rbuf) > laneBufferKept {
		t.Errorf("after a 3 MiB frame the writer keeps %d bytes, the reader %d", cap(w.wbuf), cap(r.rbuf))
	}
}
