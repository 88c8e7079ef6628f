package plugin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
)

// Direct writes (protocol 1.7). Out of process, every chunk a sink writes
// crosses to its plugin as a message, which wakes a thread of the plugin to
// copy the chunk from the arena into the output and then acknowledge it,
// while the host waits for the acknowledgement to free the slot. A sink
// whose tensors go to its files unchanged can spare all of that: it hands
// the host its open output files once, after Begin, over a direct lane, and
// the host writes those tensors into them itself, as the sink would have,
// and tells the plugin which it wrote. The plugin's process then does
// nothing per chunk.

// DirectWriter is implemented by a Sink some of whose tensors' bytes go to
// its output files unchanged, each tensor to one range of one file. A
// plugin process's host then writes those tensors into the files itself
// (protocol 1.7) instead of sending them to Write; a sink that permutes,
// compresses, hashes or otherwise reads a tensor's bytes leaves that tensor
// out. In-process the core calls Write as always.
type DirectWriter interface {
	// DirectTargets lists, after Begin, the tensors the host may write in
	// place. A tensor listed must not be expected at Write.
	DirectTargets() []DirectTarget
	// WrittenDirect records that the host wrote tensor name's bytes whole,
	// in place: what a Write of it returning nil would have recorded
	// (File.Final of its range, for a digest that follows the writes).
	WrittenDirect(name string) error
}

// DirectTarget is a tensor whose bytes, as they arrive at the sink, go
// unchanged to [Offset, Offset+Size) of File.
type DirectTarget struct {
	Tensor       string
	File         DirectFile
	Offset, Size uint64
}

// DirectFile is an output file open for writing that a DirectTarget lies
// in: an *atomicfile.File.
type DirectFile interface {
	Fd() uintptr
	// FinalPath is the name the file gets on Commit, which errors name.
	FinalPath() string
}

// maxDirectFiles is how many descriptors one message of a direct lane
// carries (Linux takes at most 253 in one).
const maxDirectFiles = 200

// Kinds of lane, the byte that carries a lane's socket to the plugin.
const (
	laneWriteSeries = 0   // a WriteSeries stream (1.6)
	laneDirect      = 'd' // a direct lane (1.7)
)

// Bytes of the messages that carry a direct lane's descriptors.
const (
	directMoreFiles = 'f'
	directLastFiles = 'F'
)

// directWrites is the host's end of a sink's direct lane: the sink's
// output files, open in this process, and the tensors it may write into
// them itself.
type directWrites struct {
	c       *rpcClient
	conn    *net.UnixConn
	lane    *laneConn
	files   []*directFile
	paths   []string
	targets map[string]*directTarget
	opts    directOptions

	mu       sync.Mutex
	pending  []uint32 // written, not yet told
	held     uint64   // the bytes of the pending targets
	spare    []uint32
	flushing bool  // a writer is telling the plugin
	err      error // telling the plugin failed: the lane is broken

	// ended is closed once the plugin's end of the lane ended: its status
	// frame came (end is its error, nil for OK), or the lane broke (end is
	// why). A plugin that refused a notice, or died, so fails the next
	// write at once, not at Commit.
	ended  chan struct{}
	end    error
	ending atomic.Bool // the host sent its 'e'
}

// directOptions are what the sink's Begin options say of the files the
// host writes into over its direct lane.
type directOptions struct {
	fsyncs    bool // the sink syncs its outputs at Commit: start writeback early
	digests   bool // the run asked the sink for its files' digests
	keepCache bool // the user reads the outputs next: leave their pages cached
}

// directTarget is a DirectTarget on the host's side.
type directTarget struct {
	index        uint32
	file         int
	offset, size uint64
	written      atomic.Bool
}

// directFile is one of the sink's files as CopyToFile writes it from the
// host. Like the sink's own output, it hands what is written to the
// kernel's writeback as it goes, and keeps the source files of copies open
// until it closes.
type directFile struct {
	*os.File
	fsyncs    bool // the sink syncs the file at Commit
	writeback atomicfile.Writeback
	hooks     atomicfile.DoneHooks
	closed    sync.Once

	// digests says the run asked for the file's digest, which the plugin
	// may hand over to the host or compute in its own process. digest
	// computes it once the plugin handed it over (protocol 1.9,
	// DirectHashTo); only the goroutine that reads the plugin's frames sets
	// it, before the lane ended.
	digests bool
	digest  atomic.Pointer[atomicfile.Follower]
}

// newDirectFile returns the host's view of a file the plugin passed. Its
// early syncs drop the pages they made durable from the page cache once
// nobody is to read them (readFront), unless opts.keepCache.
func newDirectFile(fd int, opts directOptions) *directFile {
	f := &directFile{File: os.NewFile(uintptr(fd), "direct output"), fsyncs: opts.fsyncs, digests: opts.digests}
	if !opts.keepCache {
		f.writeback.DropBehind(f.readFront)
	}
	return f
}

// readFront returns the offset before which the host reads nothing of the
// file any more: how far the digest it computes hashed, or the start of the
// file while the run asked for a digest the plugin has not handed over, as
// the plugin may yet, or may compute it by reading the file in its process.
func (f *directFile) readFront() int64 {
	if dg := f.digest.Load(); dg != nil {
		return dg.ReadFront()
	}
	if f.digests {
		return 0
	}
	return math.MaxInt64
}

// Written records that bytes [off, off+n) were just written, and hands
// them to the kernel's writeback when the sink will sync the file.
func (f *directFile) Written(off, n int64) {
	if f.fsyncs {
		f.writeback.Written(f.File, off, n)
	}
}

// OnDone runs fn once the host closes the file, at the sink's Commit or
// Abort; at once when it is closed.
func (f *directFile) OnDone(fn func()) { f.hooks.OnDone(fn) }

// close runs the OnDone functions and closes the file, once its early
// sync, if one runs, ended. Later calls do nothing.
func (f *directFile) close() {
	f.closed.Do(func() {
		f.hooks.End()
		f.writeback.Wait()
		f.File.Close()
	})
}

// openDirect opens session's direct lane and takes the sink's targets. It
// returns nil, and ends the lane, when the sink offers none; an error then
// is the one the plugin ended the lane with.
func (c *rpcClient) openDirect(ctx context.Context, session uint64, opts directOptions) (*directWrites, error) {
	conn, err := c.lanes.openConn(laneDirect)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	d := &directWrites{c: c, conn: conn, lane: newLaneConn(conn), opts: opts}
	if err := d.handshake(session); err != nil {
		d.close()
		return nil, err
	}
	d.ended = make(chan struct{})
	go d.watch()
	if len(d.targets) == 0 {
		err := d.finish()
		d.close()
		return nil, err
	}
	return d, nil
}

// watch follows the digests the plugin hands over and waits for its end of
// the lane: its status frame, or the lane breaking.
func (d *directWrites) watch() {
	defer close(d.ended)
	for {
		kind, payload, err := d.lane.readFrame()
		switch {
		case err != nil:
			d.end = laneBroken(err)
			return
		case kind == frameHashTo:
			if err := d.followDigest(payload); err != nil {
				d.end = status.Errorf(codes.Internal, "direct lane: %v", err)
				return
			}
		case kind != frameStatus:
			d.end = status.Errorf(codes.Internal, "direct lane: the plugin sent a frame of kind %q", kind)
			return
		default:
			d.end = laneStatus(payload)
			return
		}
	}
}

// followDigest takes a DirectHashTo: the digest of a file is the host's to
// compute, and its bytes before an offset are final.
func (d *directWrites) followDigest(payload []byte) error {
	i, end, err := parseHashTo(payload, len(d.files))
	if err != nil {
		return err
	}
	f := d.files[i]
	dg := f.digest.Load()
	if dg == nil {
		dg = atomicfile.NewFollower(f.File, d.paths[i], sha256.New(), 0)
		f.digest.Store(dg)
	}
	dg.Final(0, end)
	return nil
}

// parseHashTo reads a DirectHashTo for a lane of files files.
func parseHashTo(payload []byte, files int) (file int, end int64, err error) {
	m := &pb.DirectHashTo{}
	if err := proto.Unmarshal(payload, m); err != nil {
		return 0, 0, fmt.Errorf("a DirectHashTo that does not decode: %v", err)
	}
	if int64(m.File) >= int64(files) {
		return 0, 0, fmt.Errorf("the digest of file %d handed over, of %d files", m.File, files)
	}
	if m.End > math.MaxInt64 {
		return 0, 0, fmt.Errorf("the bytes of file %d final up to offset %d, past what a file holds", m.File, m.End)
	}
	return int(m.File), int64(m.End), nil
}

// digestOf returns the SHA-256 of the file committed as path, size bytes,
// when the host computes it (the plugin handed it over); ok is false when
// it does not, or when the file does not hold size bytes (the core then
// reads it back). Call it after the sink's Commit, once the lane ended.
func (d *directWrites) digestOf(path string, size uint64) (sha string, ok bool, err error) {
	for i, p := range d.paths {
		dg := d.files[i].digest.Load()
		if p != path || dg == nil {
			continue
		}
		fi, err := d.files[i].Stat()
		if err != nil {
			return "", false, fmt.Errorf("computing the SHA-256 of %s: %w", path, err)
		}
		if fi.Size() < 0 || uint64(fi.Size()) != size {
			return "", false, nil
		}
		if err := dg.Finish(fi.Size()); err != nil {
			return "", false, fmt.Errorf("computing the SHA-256 of %s: %w", path, err)
		}
		return hex.EncodeToString(dg.Sum(nil)), true, nil
	}
	return "", false, nil
}

// endedErr returns why the plugin ended the lane, once it did, and nil
// before. A lane ended well but before the host ended it is an error too.
func (d *directWrites) endedErr() error {
	select {
	case <-d.ended:
	default:
		return nil
	}
	if d.end == nil && !d.ending.Load() {
		return status.Error(codes.Internal, "direct lane: the plugin ended it before the host did")
	}
	return d.end
}

// handshake asks for the targets of session and takes the files and the
// targets the plugin sends.
func (d *directWrites) handshake(session uint64) error {
	if err := d.lane.writeFrame(frameMessage, &pb.SessionRequest{Session: session}); err != nil {
		return laneBroken(err)
	}
	fds, err := receiveFiles(d.conn)
	for _, fd := range fds {
		d.files = append(d.files, newDirectFile(fd, d.opts))
	}
	if err != nil {
		return laneBroken(fmt.Errorf("direct lane: %w", err))
	}
	kind, payload, err := d.lane.readFrame()
	if err != nil {
		return laneBroken(err)
	}
	if kind == frameStatus {
		return laneStatus(payload)
	}
	t := &pb.DirectTargets{}
	if kind != frameMessage {
		return status.Errorf(codes.Internal, "direct lane: the plugin sent a frame of kind %q for its targets", kind)
	}
	if err := proto.Unmarshal(payload, t); err != nil {
		return status.Errorf(codes.Internal, "direct lane: the plugin sent targets that do not decode: %v", err)
	}
	if err := d.take(t); err != nil {
		return status.Errorf(codes.Internal, "direct lane: %v", err)
	}
	return nil
}

// take checks the plugin's targets and keeps them.
func (d *directWrites) take(t *pb.DirectTargets) error {
	if len(t.Files) != len(d.files) {
		return fmt.Errorf("the plugin named %d files and sent %d", len(t.Files), len(d.files))
	}
	d.paths = t.Files
	list := valuesOf(t.Tensors, func(x *pb.DirectTarget) packedTarget {
		return packedTarget{tensor: x.Tensor, file: x.File, offset: x.Offset, size: x.Size}
	})
	if len(t.PackedTensors) > 0 {
		if len(t.Tensors) > 0 {
			return fmt.Errorf("targets %w", errBothForms)
		}
		var err error
		if list, err = parseDirectTargets(t.PackedTensors); err != nil {
			return fmt.Errorf("packed targets: %w", err)
		}
	}
	if uint64(len(list)) > math.MaxUint32 {
		return fmt.Errorf("the plugin offered %d tensors", len(list))
	}
	d.targets = make(map[string]*directTarget, len(list))
	all := make([]directTarget, len(list))
	for i, x := range list {
		if int(x.file) >= len(d.files) {
			return fmt.Errorf("tensor %q lies in file %d of %d", x.tensor, x.file, len(d.files))
		}
		if x.offset > math.MaxInt64 || x.size > math.MaxInt64-x.offset {
			return fmt.Errorf("tensor %q: %d bytes at offset %d reach past what a file holds", x.tensor, x.size, x.offset)
		}
		if _, dup := d.targets[x.tensor]; dup {
			return fmt.Errorf("tensor %q offered twice", x.tensor)
		}
		all[i] = directTarget{index: uint32(i), file: int(x.file), offset: x.offset, size: x.size}
		d.targets[x.tensor] = &all[i]
	}
	return nil
}

// write writes tensor name's bytes into its range, then tells the plugin.
func (d *directWrites) write(ctx context.Context, name string, t *directTarget, data TensorData) error {
	path := d.paths[t.file]
	if err := d.endedErr(); err != nil {
		return d.c.callErr(ctx, err)
	}
	if data.Size() != t.size {
		return fmt.Errorf("tensor %q for %s: %d bytes to write, the sink planned %d", name, path, data.Size(), t.size)
	}
	if t.written.Swap(true) {
		return fmt.Errorf("tensor %q for %s written twice", name, path)
	}
	if err := CopyToFile(d.files[t.file], int64(t.offset), data); err != nil {
		t.written.Store(false)
		return atomicfile.WrapNoSpace(path, fmt.Errorf("tensor %q at offset %d of %s: %w", name, t.offset, path, err))
	}
	return d.notify(t.index, t.size, false)
}

// Notices wait until this many tensors, or bytes of them, are written, or
// the lane ends. A notice wakes the plugin's process, which on a model of
// tens of thousands of small tensors would cost more than their writes; the
// plugin needs the notices only to record the tensors written and to let
// the digest that follows the writes (File.Final) go on, which a few MiB
// behind does not slow.
const (
	directNoticeTensors = 256
	directNoticeBytes   = 4 << 20
)

// notify records that target i, of size bytes, was written, and tells the
// plugin what was recorded once enough gathered, or when all is true.
// While one writer sends, the others only record: the sender sends what
// gathered meanwhile before it returns.
func (d *directWrites) notify(i uint32, size uint64, all bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	if !all {
		d.pending = append(d.pending, i)
		d.held += size
	}
	if d.flushing || !all && len(d.pending) < directNoticeTensors && d.held < directNoticeBytes {
		return nil
	}
	d.flushing = true
	for len(d.pending) > 0 && d.err == nil {
		batch := d.pending
		d.pending, d.held = d.spare[:0], 0
		d.mu.Unlock()
		err := d.send(batch)
		d.mu.Lock()
		d.spare = batch
		if err != nil {
			d.err = err
		}
	}
	d.flushing = false
	return d.err
}

// send sends one DirectWritten, within the plugin timeout: a plugin that
// stops reading its lane is stopped as hung. When the plugin ended the
// lane, its status says why.
func (d *directWrites) send(batch []uint32) error {
	ctx, cancel := d.c.unary(context.Background(), "the plugin to take the notices of direct writes")
	defer cancel()
	stop := context.AfterFunc(ctx, func() { d.conn.Close() })
	err := d.lane.writeFrame(frameMessage, &pb.DirectWritten{Targets: batch})
	if !stop() {
		err = errors.Join(err, context.Cause(ctx))
	}
	if err == nil {
		return nil
	}
	<-d.ended // the plugin closed its end, or the watchdog closed the lane
	if d.end != nil {
		err = d.end
	} else {
		err = laneBroken(err)
	}
	return d.c.callErr(ctx, err)
}

// finish ends the lane before the sink's Commit: the plugin has then taken
// every notice, and its status says whether it took them well. The files
// stay open, for the digests the host computes, until close. The caller
// closes the lane to stop waiting.
func (d *directWrites) finish() error {
	defer d.conn.Close()
	if err := d.syncErr(); err != nil {
		d.conn.Close() // the plugin reads a cancellation
		<-d.ended
		return err
	}
	sendErr := d.notify(0, 0, true)
	if sendErr == nil {
		d.ending.Store(true)
		if err := d.lane.writeFrame(frameEnd, nil); err != nil {
			sendErr = laneBroken(err)
		}
	}
	<-d.ended
	if d.end != nil {
		return d.end // the plugin's reason comes first
	}
	return sendErr
}

// syncErr waits for the early syncs of the files (atomicfile.Writeback)
// and returns the first error one met. The sink's Commit would not see it:
// the kernel reports a failed writeback to one sync of the open file, and
// the host's files are the sink's, passed over the lane.
func (d *directWrites) syncErr() error {
	for i, f := range d.files {
		if err := f.writeback.Wait(); err != nil {
			return atomicfile.WrapNoSpace(d.paths[i], fmt.Errorf("syncing %s: %w", d.paths[i], err))
		}
	}
	return nil
}

// close closes the lane, which the plugin reads as a cancellation, stops
// the digests the host computes, and closes the files.
func (d *directWrites) close() {
	d.conn.Close()
	if d.ended != nil {
		<-d.ended // no digest starts after this
	}
	for _, f := range d.files {
		if dg := f.digest.Load(); dg != nil {
			dg.Stop()
		}
		f.close()
	}
}

// laneStatus returns the error a lane's status frame carries, nil for OK.
func laneStatus(payload []byte) error {
	st := &spb.Status{}
	if err := proto.Unmarshal(payload, st); err != nil {
		return status.Errorf(codes.Internal, "lane: the plugin ended it with a status that does not decode: %v", err)
	}
	if st.Code == int32(codes.OK) {
		return nil
	}
	return status.FromProto(st).Err()
}

// serveDirectLane serves one direct lane for the sinks of s and ends it
// with its status frame. The files go first whatever happens, none when the
// request fails, so that the host always finds them where it looks.
func serveDirectLane(conn net.Conn, s sinkServer) {
	defer conn.Close()
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return // the host reads the lane closed: a cancellation
	}
	l := newLaneConn(uc)
	dw, targets, err := s.directTargets(l)
	files, msg := directTargetsToProto(targets, s.hostPackedTensors.Load())
	if serr := sendFiles(uc, files); serr != nil && err == nil {
		err = status.Errorf(codes.Unavailable, "direct lane: sending the output files: %v", serr)
	}
	if err == nil {
		if werr := l.writeFrame(frameMessage, msg); werr != nil {
			err = status.Errorf(codes.Unavailable, "direct lane: %v", werr)
		}
	}
	var relay *hashRelay
	if err == nil && s.hostDigests.Load() {
		relay = relayDigests(l, files)
	}
	if err == nil {
		err = recordDirect(l, dw, targets)
	}
	relay.stop() // every 'h' frame before the status
	end := &spb.Status{}
	if err != nil {
		end = status.Convert(err).Proto()
	}
	l.writeFrame(frameStatus, end)
}

// digestRelayer is an output file whose digest can be handed to the host:
// an *atomicfile.File.
type digestRelayer interface {
	RelayDigest(relay func(end int64)) bool
}

// hashRelay sends a direct lane's DirectHashTo frames (protocol 1.9) for
// the files whose digests the plugin handed to the host.
type hashRelay struct {
	l       *laneConn
	mu      sync.Mutex
	sent    []int64 // how far each file's final bytes were told
	stopped bool
	err     error
}

// relayDigests hands the host the digest of every file of the lane that
// computes one. The first frame of each goes before relayDigests returns.
func relayDigests(l *laneConn, files []DirectFile) *hashRelay {
	r := &hashRelay{l: l, sent: make([]int64, len(files))}
	for i := range r.sent {
		r.sent[i] = -1 // a first end of 0 is told too
	}
	for i, f := range files {
		if dr, ok := f.(digestRelayer); ok {
			dr.RelayDigest(func(end int64) { r.send(uint32(i), end) })
		}
	}
	return r
}

// send tells the host that file's bytes before end are final, unless it was
// told as much already or the lane is ending. A lane that breaks ends the
// relay: the host reads the break too.
func (r *hashRelay) send(file uint32, end int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.err != nil || end <= r.sent[file] {
		return
	}
	r.sent[file] = end
	r.err = r.l.writeFrame(frameHashTo, &pb.DirectHashTo{File: file, End: uint64(end)})
}

// stop ends the relay, once a frame being sent is sent. A nil relay does
// nothing.
func (r *hashRelay) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// directTargets reads the host's request and returns the sink it names, if
// it writes directly, and the tensors it offers.
func (s sinkServer) directTargets(l *laneConn) (DirectWriter, []DirectTarget, error) {
	kind, payload, err := l.readFrame()
	if err != nil {
		return nil, nil, laneReadErr(err)
	}
	if kind != frameMessage {
		return nil, nil, status.Errorf(codes.InvalidArgument, "direct lane: a frame of kind %q for the request", kind)
	}
	req := &pb.SessionRequest{}
	if err := proto.Unmarshal(payload, req); err != nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "direct lane: a request that does not decode: %v", err)
	}
	sk, err := s.sink(req.Session)
	if err != nil {
		return nil, nil, toStatus(err)
	}
	dw, ok := sk.(DirectWriter)
	if !ok {
		return nil, nil, nil
	}
	// In the order of their offsets (then files, then names), so that what
	// crosses does not depend on the order a sink keeps its tensors in (a
	// map's, often): numbers compare in a fraction of the time 20,000 names
	// take.
	targets := dw.DirectTargets()
	slices.SortFunc(targets, func(a, b DirectTarget) int {
		if c := cmp.Compare(a.Offset, b.Offset); c != 0 {
			return c
		}
		if c := cmp.Compare(a.File.FinalPath(), b.File.FinalPath()); c != 0 {
			return c
		}
		return cmp.Compare(a.Tensor, b.Tensor)
	})
	return dw, targets, nil
}

// recordDirect records what the host says it wrote until it ends the lane.
func recordDirect(l *laneConn, dw DirectWriter, targets []DirectTarget) error {
	for {
		kind, payload, err := l.readFrame()
		if err != nil {
			return laneReadErr(err)
		}
		switch kind {
		case frameEnd:
			return nil
		case frameMessage:
		default:
			return status.Errorf(codes.InvalidArgument, "direct lane: a frame of kind %q", kind)
		}
		w := &pb.DirectWritten{}
		if err := proto.Unmarshal(payload, w); err != nil {
			return status.Errorf(codes.InvalidArgument, "direct lane: a notice that does not decode: %v", err)
		}
		for _, i := range w.Targets {
			if int(i) >= len(targets) {
				return status.Errorf(codes.InvalidArgument, "direct lane: target %d written, of %d offered", i, len(targets))
			}
			if err := dw.WrittenDirect(targets[i].Tensor); err != nil {
				return toStatus(err)
			}
		}
	}
}

// directTargetsToProto numbers the targets' distinct files in order of
// first appearance; with packed, the targets travel as one packed list
// (protocol 1.8), for a host that announced it takes one.
func directTargetsToProto(targets []DirectTarget, packed bool) ([]DirectFile, *pb.DirectTargets) {
	var files []DirectFile
	index := map[DirectFile]uint32{}
	msg := &pb.DirectTargets{}
	list := make([]packedTarget, len(targets))
	for k, t := range targets {
		i, ok := index[t.File]
		if !ok {
			i = uint32(len(files))
			index[t.File] = i
			files = append(files, t.File)
			msg.Files = append(msg.Files, t.File.FinalPath())
		}
		list[k] = packedTarget{tensor: t.Tensor, file: i, offset: t.Offset, size: t.Size}
	}
	switch {
	case packed && len(list) > 0:
		msg.PackedTensors = appendDirectTargets(nil, list)
	default:
		msg.Tensors = messagesOf(list, func(m *pb.DirectTarget, t packedTarget) {
			m.Tensor, m.File, m.Offset, m.Size = t.tensor, t.file, t.offset, t.size
		})
	}
	return files, msg
}
