//go:build unix

package plugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-ml/sluice/internal/testwait"
	"github.com/sluice-ml/sluice/sdk/atomicfile"
	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// directSink writes its tensors back to back, alternately into two files,
// and offers the host every one but "permuted" (protocol 1.7). It records
// how each tensor arrived.
type directSink struct {
	dir    string
	names  []string
	sizes  map[string]int
	failOn string // WrittenDirect of this tensor fails

	mu      sync.Mutex
	files   []*atomicfile.File
	places  map[string]directPlace
	arrived map[string]string // tensor → "direct" or "write"
	aborted bool
}

type directPlace struct {
	file int
	off  int64
}

func newDirectSink(dir string, sizes map[string]int, names []string) *directSink {
	return &directSink{dir: dir, names: names, sizes: sizes}
}

// layout returns the bytes each file holds when every tensor i's bytes are
// contentOf(name).
func (s *directSink) layout() [][]byte {
	out := make([][]byte, 2)
	for i, n := range s.names {
		out[i%2] = append(out[i%2], contentOf(n, s.sizes[n])...)
	}
	return out
}

// contentOf is tensor name's bytes in these tests.
func contentOf(name string, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(len(name)*31 + i*7 + int(name[len(name)-1]))
	}
	return b
}

func (s *directSink) Plan(ctx context.Context, in *tensor.Manifest) (*SinkPlan, error) {
	return &SinkPlan{}, nil
}

func (s *directSink) Begin(ctx context.Context, m *tensor.Manifest, opts BeginOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.places, s.arrived = map[string]directPlace{}, map[string]string{}
	var ends [2]int64
	for i, n := range s.names {
		s.places[n] = directPlace{file: i % 2, off: ends[i%2]}
		ends[i%2] += int64(s.sizes[n])
	}
	for i, size := range ends {
		f, err := CreateOutput(filepath.Join(s.dir, fmt.Sprintf("out%d.bin", i)), size, opts)
		if err != nil {
			return err
		}
		s.files = append(s.files, f)
	}
	return nil
}

func (s *directSink) Write(ctx context.Context, name string, data TensorData) error {
	pl := s.places[name]
	if err := CopyToFile(s.files[pl.file], pl.off, data); err != nil {
		return err
	}
	return s.record(name, "write")
}

func (s *directSink) record(name, how string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pl, ok := s.places[name]
	if !ok {
		return fmt.Errorf("tensor %q was not planned", name)
	}
	if s.arrived[name] != "" {
		return fmt.Errorf("tensor %q written twice", name)
	}
	s.arrived[name] = how
	s.files[pl.file].Final(pl.off, int64(s.sizes[name]))
	return nil
}

func (s *directSink) DirectTargets() []DirectTarget {
	var out []DirectTarget
	for _, n := range s.names {
		if n != "permuted" {
			pl := s.places[n]
			out = append(out, DirectTarget{Tensor: n, File: s.files[pl.file], Offset: uint64(pl.off), Size: uint64(s.sizes[n])})
		}
	}
	return out
}

func (s *directSink) WrittenDirect(name string) error {
	if name == s.failOn {
		return &InputError{File: "out0.bin", Tensor: name, Msg: "refused by the test sink"}
	}
	return s.record(name, "direct")
}

func (s *directSink) Commit(ctx context.Context) ([]Artifact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.arrived) != len(s.names) {
		return nil, fmt.Errorf("%d of %d tensors arrived", len(s.arrived), len(s.names))
	}
	var arts []Artifact
	for _, f := range s.files {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if err := f.Commit(); err != nil {
			return nil, err
		}
		arts = append(arts, Committed(f, uint64(st.Size())))
	}
	return arts, nil
}

func (s *directSink) Abort(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
	for _, f := range s.files {
		f.Abort()
	}
	return nil
}

// directWorkload is a big tensor, one whose bytes lie in a file, more small
// ones than a notice gathers, and one the sink does not offer.
func directWorkload(t *testing.T) (*directSink, map[string]TensorData) {
	t.Helper()
	sizes := map[string]int{"big": 8<<20 + 5, "ref": 300 << 10, "permuted": 64 << 10}
	names := []string{"big", "ref", "permuted"}
	for i := range directNoticeTensors + 44 {
		n := fmt.Sprintf("small.%03d", i)
		sizes[n] = 1000 + i
		names = append(names, n)
	}
	src := filepath.Join(t.TempDir(), "source.bin")
	pad := []byte("0123456789")
	if err := os.WriteFile(src, append(pad, contentOf("ref", sizes["ref"])...), 0o644); err != nil {
		t.Fatal(err)
	}
	data := map[string]TensorData{}
	for _, n := range names {
		data[n] = BytesData(contentOf(n, sizes[n]))
	}
	data["ref"] = FileData(tensor.FileRef{Path: src, Offset: uint64(len(pad)), Length: uint64(sizes["ref"])})
	return newDirectSink(t.TempDir(), sizes, names), data
}

// writeAll writes every tensor of data, four at a time.
func writeAll(ctx context.Context, sk Sink, data map[string]TensorData) error {
	var g errgroup.Group
	g.SetLimit(4)
	for name, d := range data {
		g.Go(func() error { return sk.Write(ctx, name, d) })
	}
	return g.Wait()
}

// The host writes every tensor a sink offers into the sink's own files, and
// tells it which; the one it does not offer crosses a write lane. The files
// and the digests the sink reports are what writing every tensor through
// the sink gives, whether the targets crossed as a packed list (to a host
// that takes one, protocol 1.8) or as a message each, and whether the host
// computed the digests (1.9) or the sink's process did.
func TestDirectWritesLandInTheSinksFiles(t *testing.T) {
	t.Run("host of 1.10", func(t *testing.T) { testDirectWritesLand(t, 10) })
	t.Run("host of 1.9", func(t *testing.T) { testDirectWritesLand(t, 9) })
	t.Run("host of 1.8", func(t *testing.T) { testDirectWritesLand(t, 8) })
	t.Run("host of 1.7", func(t *testing.T) { testDirectWritesLand(t, 7) })
}

func testDirectWritesLand(t *testing.T, hostMinor uint32) {
	ds, data := directWorkload(t)
	sk, count, lanes := laneSink(t, ds)
	ctx := context.Background()
	if hostMinor < ProtocolMinor {
		// What a host of that minor says: packed lists from 1.8, digests
		// of its direct writes from 1.9.
		req := &pb.GetInfoRequest{HostProtocolMinor: hostMinor, HostPackedStrings: true, HostPackedTensors: hostMinor >= 8, HostDigests: hostMinor >= 9}
		if _, err := sk.c.plugin.GetInfo(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := sk.Begin(ctx, &tensor.Manifest{}, BeginOptions{Digests: true}); err != nil {
		t.Fatal(err)
	}
	if sk.direct == nil || len(sk.direct.targets) != len(ds.names)-1 {
		t.Fatalf("the host took no direct targets, or not every one offered: %+v", sk.direct)
	}
	if sk.GathersFileWrites() || sk.GathersDataWrites() {
		t.Error("a sink written directly still asks the core to gather its small writes")
	}
	if err := writeAll(ctx, sk, data); err != nil {
		t.Fatal(err)
	}
	arts, err := sk.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := ds.layout()
	for i, a := range arts {
		got, err := os.ReadFile(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Errorf("%s differs from the sink's own layout", a.Path)
		}
		if sum := sha256.Sum256(want[i]); a.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: the run has SHA-256 %s, the bytes have %x", a.Path, a.SHA256, sum)
		}
		// A host of 1.9 computes the digests itself; the plugin's files
		// then compute none.
		if _, _, pluginHashed := ds.files[i].Digest(); pluginHashed != (hostMinor < 9) {
			t.Errorf("%s: the plugin computed its digest: %v; want %v for a host of 1.%d", a.Path, pluginHashed, hostMinor < 9, hostMinor)
		}
	}
	for _, n := range ds.names {
		if how, wantHow := ds.arrived[n], map[bool]string{true: "write", false: "direct"}[n == "permuted"]; how != wantHow {
			t.Errorf("tensor %q arrived by %q, want %q", n, how, wantHow)
		}
	}
	if lanes.direct.Load() != 1 || lanes.served.Load() != 1 || count.count("WriteSeries")+count.count("Write") != 0 {
		t.Errorf("%d direct lanes, %d write lanes, %d gRPC streams; want one of each lane", lanes.direct.Load(), lanes.served.Load(), count.count("WriteSeries")+count.count("Write"))
	}
	lanes.waitClosed(t)
}

// A tensor the sink refuses to record fails the Commit with the sink's own
// error, and the Abort that follows leaves nothing behind.
func TestDirectWriteRefusedFailsTheCommit(t *testing.T) {
	ds, data := directWorkload(t)
	ds.failOn = "small.007"
	sk, _, lanes := laneSink(t, ds)
	ctx := context.Background()
	if err := sk.Begin(ctx, &tensor.Manifest{}, BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	err := writeAll(ctx, sk, data)
	if err == nil {
		_, err = sk.Commit(ctx)
	}
	if !IsBadInput(err) || !strings.Contains(err.Error(), "refused by the test sink") || !strings.Contains(err.Error(), "small.007") {
		t.Fatalf("got %v, want the sink's bad-input error naming the tensor", err)
	}
	if err := sk.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(ds.dir); len(left) != 0 {
		t.Errorf("the aborted run left %d files", len(left))
	}
	lanes.waitClosed(t)
}

// An Abort in the middle of direct writes ends the direct lane in the
// plugin too, and removes the sink's files.
func TestDirectWritesAbortedMidway(t *testing.T) {
	ds, data := directWorkload(t)
	sk, _, lanes := laneSink(t, ds)
	ctx := context.Background()
	if err := sk.Begin(ctx, &tensor.Manifest{}, BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"big", "small.001", "permuted"} {
		if err := sk.Write(ctx, n, data[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sk.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	lanes.waitClosed(t)
	if !ds.aborted {
		t.Error("the sink was not aborted")
	}
	if left, _ := os.ReadDir(ds.dir); len(left) != 0 {
		t.Errorf("the aborted run left %d files", len(left))
	}
	if err := sk.Write(ctx, "small.002", data["small.002"]); err == nil {
		t.Error("a write after Abort succeeded")
	}
}

// A sink that offers nothing is written as before, over write lanes; its
// direct lane ends at Begin.
func TestSinkWithoutDirectTargetsUsesWriteLanes(t *testing.T) {
	sink := &countingSink{got: map[string]uint64{}}
	sk, _, lanes := laneSink(t, sink)
	ctx := context.Background()
	if err := sk.Begin(ctx, &tensor.Manifest{}, BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	if sk.direct != nil {
		t.Fatal("the host kept a direct lane with nothing to write")
	}
	if err := sk.Write(ctx, "t", BytesData(make([]byte, 3<<20))); err != nil {
		t.Fatal(err)
	}
	if _, err := sk.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if lanes.direct.Load() != 1 || lanes.served.Load() != 1 || sink.got["t"] != 3<<20 {
		t.Errorf("%d direct lanes, %d write lanes, %d bytes arrived", lanes.direct.Load(), lanes.served.Load(), sink.got["t"])
	}
	lanes.waitClosed(t)
}

// The host refuses targets that do not hold together, whatever the plugin
// sends.
func TestDirectTargetsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  *pb.DirectTargets
		want string
	}{
		{"a file missing", &pb.DirectTargets{Files: []string{"a", "b"}}, "named 2 files and sent 1"},
		{"a file out of range", &pb.DirectTargets{Files: []string{"a"}, Tensors: []*pb.DirectTarget{{Tensor: "t", File: 1}}}, "lies in file 1 of 1"},
		{"a range past a file", &pb.DirectTargets{Files: []string{"a"}, Tensors: []*pb.DirectTarget{{Tensor: "t", Offset: 1 << 62, Size: 1 << 62}}}, "reach past what a file holds"},
		{"a tensor twice", &pb.DirectTargets{Files: []string{"a"}, Tensors: []*pb.DirectTarget{{Tensor: "t"}, {Tensor: "t", Offset: 8}}}, "offered twice"},
		{"a tensor twice in a packed list", &pb.DirectTargets{Files: []string{"a"}, PackedTensors: appendDirectTargets(nil, []packedTarget{{tensor: "t"}, {tensor: "t", offset: 8}})}, "offered twice"},
		{"a file out of range in a packed list", &pb.DirectTargets{Files: []string{"a"}, PackedTensors: appendDirectTargets(nil, []packedTarget{{tensor: "t", file: 1}})}, "lies in file 1 of 1"},
		{"a packed list cut short", &pb.DirectTargets{Files: []string{"a"}, PackedTensors: appendDirectTargets(nil, []packedTarget{{tensor: "t", offset: 300}})[:5]}, `packed targets: target 0 ("t"): byte 4`},
		{"targets both ways", &pb.DirectTargets{Files: []string{"a"}, Tensors: []*pb.DirectTarget{{Tensor: "t"}}, PackedTensors: appendDirectTargets(nil, []packedTarget{{tensor: "u"}})}, "targets sent both as messages and as a packed block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &directWrites{files: []*directFile{{}}}
			if err := d.take(tc.msg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// An early sync of a directly written file that fails is the host's error,
// naming the output: the sink's own fsync of the same open file would not
// see it. (A closed file's sync fails.)
func TestDirectEarlySyncErrorNamesTheOutput(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("early syncs run where sync_file_range does")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	df := &directFile{File: f, fsyncs: true}
	for off := int64(0); off < atomicfile.EarlySyncStep; off += atomicfile.WritebackStep {
		df.Written(off, atomicfile.WritebackStep)
	}
	d := &directWrites{files: []*directFile{df}, paths: []string{"out/model.gguf"}}
	if err := d.syncErr(); err == nil || !strings.Contains(err.Error(), "syncing out/model.gguf") {
		t.Errorf("syncErr = %v, want the early sync's error naming out/model.gguf", err)
	}
	unsynced := &directFile{File: f} // the sink skips its fsync: no early syncs
	for off := int64(0); off < atomicfile.EarlySyncStep; off += atomicfile.WritebackStep {
		unsynced.Written(off, atomicfile.WritebackStep)
	}
	d.files = []*directFile{unsynced}
	if err := d.syncErr(); err != nil {
		t.Errorf("syncErr of a file not synced = %v, want nil", err)
	}
}

// The host drops the pages of a sink's file from the page cache behind its
// early syncs only once nobody is to read them: at once when the run asked
// for no digest, not before the digest the plugin may hand over reaches
// them, and never while the plugin may read the file for its digest
// itself.
func TestDirectFileKeepsWhatItsDigestHasToRead(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Each directFile owns its descriptor, as one passed over the lane does.
	open := func(digests bool) *directFile {
		fd, err := syscall.Dup(int(f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		df := newDirectFile(fd, directOptions{fsyncs: true, digests: digests})
		t.Cleanup(df.close)
		return df
	}
	if got := open(false).readFront(); got != math.MaxInt64 {
		t.Errorf("no digest asked for: read front %d, want the end of any file", got)
	}
	df := open(true)
	if got := df.readFront(); got != 0 {
		t.Errorf("a digest asked for, not handed over: read front %d, want 0", got)
	}
	const hashed = 1 << 20
	if _, err := f.WriteAt(make([]byte, hashed), 0); err != nil {
		t.Fatal(err)
	}
	dg := atomicfile.NewFollower(df.File, "out/model.gguf", sha256.New(), 0)
	defer dg.Stop()
	df.digest.Store(dg)
	dg.Final(0, hashed)
	testwait.Until(t, "the host's digest to read the final bytes", func() bool { return df.readFront() == hashed })
}

// FuzzServeDirectLane feeds the plugin's end of a direct lane arbitrary
// bytes from the host. The plugin must send its files, then well-formed
// frames ending in exactly one status, and return, whatever it is sent.
func FuzzServeDirectLane(f *testing.F) {
	frame := func(kind byte, m proto.Message) []byte {
		var payload []byte
		if m != nil {
			payload, _ = proto.Marshal(m)
		}
		n := len(payload) + 1
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24), kind}, payload...)
	}
	req := frame('m', &pb.SessionRequest{Session: 1})
	f.Add(append(append(req, frame('m', &pb.DirectWritten{Targets: []uint32{0, 1}})...), frame('e', nil)...))
	f.Add(append(append(req, frame('m', &pb.DirectWritten{Targets: []uint32{0, 0}})...), frame('e', nil)...))
	f.Add(append(append(req, frame('m', &pb.DirectWritten{Targets: []uint32{9}})...), frame('x', nil)...))
	f.Add(append(req, 0xff, 0xff, 0xff, 0x7f))
	f.Add(frame('m', &pb.SessionRequest{Session: 2}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// To a host that computes the digests of its direct writes (1.9),
		// and to one that does not.
		for _, hostDigests := range []bool{false, true} {
			ds := newDirectSink(t.TempDir(), map[string]int{"a": 10, "b": 20, "permuted": 5}, []string{"a", "b", "permuted"})
			if err := ds.Begin(context.Background(), &tensor.Manifest{}, BeginOptions{Digests: hostDigests}); err != nil {
				t.Fatal(err)
			}
			srv := newServer(&Plugin{Name: "fuzz", Version: "0"}, nil)
			srv.sinks[1] = ds
			srv.hostDigests.Store(hostDigests)
			out := serveLaneBytes(t, b, func(c *net.UnixConn) { serveDirectLane(c, sinkServer{server: srv}) })
			ds.Abort(context.Background())
			out = bytes.TrimLeft(out, string(rune(directMoreFiles)))
			if len(out) == 0 || out[0] != directLastFiles {
				t.Fatalf("the plugin did not send its files first: %q", out[:min(len(out), 8)])
			}
			checkLaneFrames(t, out[1:], func() proto.Message { return &pb.DirectTargets{} })
		}
	})
}

// FuzzParseHashTo feeds the host DirectHashTo payloads (protocol 1.9), as a
// plugin sends them on a direct lane of three files: what it accepts names
// one of the files and an offset a file can have.
func FuzzParseHashTo(f *testing.F) {
	enc := func(m *pb.DirectHashTo) []byte { b, _ := proto.Marshal(m); return b }
	f.Add(enc(&pb.DirectHashTo{File: 1, End: 4096}))
	f.Add(enc(&pb.DirectHashTo{File: 3, End: 1}))
	f.Add(enc(&pb.DirectHashTo{File: 0, End: 1 << 63}))
	f.Add([]byte{0x08, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, end, err := parseHashTo(b, 3)
		if err != nil {
			return
		}
		if file < 0 || file >= 3 || end < 0 {
			t.Fatalf("accepted file %d, end %d", file, end)
		}
		m := &pb.DirectHashTo{}
		if proto.Unmarshal(b, m) != nil || int(m.File) != file || int64(m.End) != end {
			t.Fatalf("read file %d, end %d from %x", file, end, b)
		}
	})
}
