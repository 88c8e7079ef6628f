// Package run executes a plan: it streams every needed source tensor through
// its ops to its sinks, in parallel, inside a memory budget, then commits
// every sink, or aborts them all so nothing half-written is left under an
// output's name.
//
// Memory is the shared arena (reserved per tensor job, so a job that starts
// can always finish) plus a byte budget for the rare ops that need a whole
// tensor at once. Tensor bytes that need no change reach sinks as file
// references and never pass through memory.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Options configure a run.
type Options struct {
	// Arena is the shared memory every chunk lives in.
	Arena *plugin.Arena
	// HeapBudget bounds the bytes held outside the arena by whole-tensor ops.
	HeapBudget uint64
	// Workers bounds the goroutines applying ops at once; 0 means GOMAXPROCS.
	Workers int
	// Sources gives the opened source of every source stage.
	Sources map[*pipeline.Stage]plugin.Source
	// Progress, when set, hears about the bytes done.
	Progress Progress
	// NoFsync gives up durability against a crash of the machine (sluice
	// run --fsync=false): sinks are begun with BeginOptions.NoFsync, and
	// detached signatures are renamed into place unsynced.
	NoFsync bool
	// KeepCache leaves the outputs in the page cache as they are written
	// (sluice run --keep-cache): sinks are begun with
	// BeginOptions.KeepCache.
	KeepCache bool
}

// Progress receives progress reports. Implementations must be safe for
// concurrent use.
type Progress interface {
	// Start announces the total bytes of source data to process.
	Start(total uint64, tensors int)
	// Advance reports n more bytes done.
	Advance(n uint64)
	// TensorDone reports one tensor finished.
	TensorDone(name string)
}

// Result is what a successful run wrote.
type Result struct {
	// Artifacts lists each sink's committed files, in plan order.
	Artifacts []SinkArtifacts
	// Bytes is the source data processed.
	Bytes uint64
}

// SinkArtifacts are one sink's outputs.
type SinkArtifacts struct {
	Stage     *pipeline.Stage
	Artifacts []plugin.Artifact
}

// Execute runs the plan. On failure every sink is aborted.
func Execute(ctx context.Context, pl *plan.Plan, opts Options) (*Result, error) {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	r := &runner{opts: opts, cpu: newRankGate(opts.Workers), ahead: newRankGate(readAheadChunks(opts.Workers) * min(opts.Arena.SlotSize(), chunkTarget)),
		heap:   semaphore.NewWeighted(int64(max(opts.HeapBudget, 1))),
		pieces: plugin.NewPieces(opts.Arena), files: map[string]*sourceFile{}}
	defer r.closeFiles()

	begun := make([]*plan.SinkPlan, 0, len(pl.Sinks))
	abort := func(cause error) error {
		actx := context.WithoutCancel(ctx)
		for _, sk := range begun {
			if err := sk.Sink.Abort(actx); err != nil && !errors.Is(err, plugin.ErrPluginExited) {
				cause = errors.Join(cause, fmt.Errorf("%s: abort: %w", sk.Stage.Addr(), err))
			}
			// A sink whose process died could not remove its temporary
			// files; they carry its pid, which no longer runs.
			for _, f := range sk.Plan.Files {
				atomicfile.CleanStale(f.Path)
			}
		}
		return cause
	}
	for _, sk := range pl.Sinks {
		begun = append(begun, sk)
		opt := plugin.BeginOptions{SigningKey: sk.SigningKey, SigningKeyID: sk.SigningKeyID, NoFsync: opts.NoFsync, KeepCache: opts.KeepCache}
		if err := sk.Sink.Begin(ctx, sk.Final, opt); err != nil {
			return nil, abort(&plan.StageError{Stage: sk.Stage, Err: noSpace(sk, err)})
		}
	}

	var total uint64
	for _, t := range pl.Trees {
		total += t.Tensor.Size
	}
	if opts.Progress != nil {
		opts.Progress.Start(total, len(pl.Trees))
	}
	if err := r.runTrees(ctx, pl.Trees); err != nil {
		return nil, abort(err)
	}
	res := &Result{Bytes: total}
	for i, sk := range pl.Sinks {
		arts, err := sk.Sink.Commit(ctx)
		if err != nil {
			begun = pl.Sinks[i:]
			return nil, abort(&plan.StageError{Stage: sk.Stage, Err: noSpace(sk, err)})
		}
		sigs, err := signDetached(sk, arts, !opts.NoFsync)
		if err != nil {
			begun = pl.Sinks[i+1:]
			return nil, abort(&plan.StageError{Stage: sk.Stage, Err: err})
		}
		res.Artifacts = append(res.Artifacts, SinkArtifacts{Stage: sk.Stage, Artifacts: append(arts, sigs...)})
	}
	return res, nil
}

// noSpace completes a full-disk error (or a file size limit) from a sink
// with what the plan knows: the output it hit (the sink's only file, when the
// error does not say) and the bytes that output needs.
func noSpace(sk *plan.SinkPlan, err error) error {
	if !atomicfile.IsNoSpace(err) {
		return err
	}
	var ns *atomicfile.NoSpaceError
	if !errors.As(atomicfile.AsNoSpace(err, 0), &ns) {
		return err
	}
	var files []plugin.PlannedFile
	if sk.Plan != nil {
		files = sk.Plan.Files
	}
	if ns.Path == "" && len(files) == 1 {
		ns.Path = files[0].Path
	}
	for _, f := range files {
		if ns.Needed == 0 && samePath(f.Path, ns.Path) {
			ns.Needed = int64(f.Size)
		}
	}
	return ns
}

func samePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

type runner struct {
	opts Options
	cpu  *rankGate
	// ahead bounds the bytes of the chunks read for ops that have no core
	// yet, over all trees (readAheadChunks): trees read ahead only as far as
	// the cores can use, where each tree in flight read a few chunks ahead
	// of its own, and every slot they held at once is one more whose pages
	// each process of the run touches.
	ahead *rankGate
	heap  *semaphore.Weighted
	// pieces holds the outputs of small trees while their writes wait
	// (runOneChunk).
	pieces *plugin.Pieces

	mu    sync.Mutex
	files map[string]*sourceFile
}

// sourceFile is a source file the run reads tensors from itself, and its
// size when last looked at.
type sourceFile struct {
	*os.File
	size atomic.Int64
}

func (r *runner) closeFiles() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.files {
		f.Close()
	}
}

// file returns a shared read handle of a source file, with its size.
func (r *runner) file(p string) (*sourceFile, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.files[p]; ok {
		return f, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	sf := &sourceFile{File: f}
	sf.size.Store(fi.Size())
	r.files[p] = sf
	return sf, nil
}

// holds reports whether the file holds bytes [off, end), looking at its
// size again only when the one last seen is too small: a model of 20,000
// tensors in one file took 20,000 fstat calls, 2 µs of CPU each and a trap
// to the hypervisor on a virtual machine. A file cut short after it was
// looked at is found by the read (sectionReader).
func (f *sourceFile) holds(off, end uint64) (size int64, ok bool) {
	if size = f.size.Load(); end >= off && end <= uint64(size) {
		return size, true
	}
	size = f.lookAgain()
	return size, end >= off && end <= uint64(size)
}

// lookAgain reads the file's size again and returns it (the size last seen
// if the file cannot say).
func (f *sourceFile) lookAgain() int64 {
	if fi, err := f.Stat(); err == nil {
		f.size.Store(fi.Size())
	}
	return f.size.Load()
}

// maxCopies is how many small trees (isSmallCopy, isSmallStream) run at
// once, beside the others. Their sinks gather their writes
// (plugin.FileWriteGatherer, plugin.DataWriteGatherer: a plugin process's
// sink sends many in one message, where a model of many small tensors would
// otherwise cost a round trip each), so the more in flight the fewer
// messages. Copies hold no memory of the run's and no core; conversions
// hold a slot per node of the arena while they convert, and their output,
// in a piece of a slot shared with others (runOneChunk), until it is
// written. Small, so that a sink that buffers what it is given holds at
// most maxCopies × smallCopy bytes for them.
const (
	maxCopies = 64
	smallCopy = 256 << 10
)

// runTrees runs the tensor jobs, several at once, in their order. Fixed
// sets of goroutines take the trees one after another (a goroutine per tree
// would grow a new stack through the plugin calls for each of a model's
// tensors, of which there can be tens of thousands): 2 × workers + 2 for
// most trees, and up to maxCopies more for small trees whose writes their
// sinks gather, which the first hand over as they come to them.
func (r *runner) runTrees(ctx context.Context, trees []*plan.Tree) error {
	g, ctx := errgroup.WithContext(ctx)
	run := func(t *plan.Tree, rank int) error {
		if err := r.runTree(ctx, t, rank); err != nil {
			if ctx.Err() != nil && !isOwnError(err) {
				return ctx.Err()
			}
			return err
		}
		return nil
	}
	small := make([]bool, len(trees))
	copyTrees := 0 // small ones
	slot := uint64(r.opts.Arena.SlotSize())
	for i, t := range trees {
		if small[i] = isSmallCopy(t) || isSmallStream(t, slot); small[i] {
			copyTrees++
		}
	}
	copies := make(chan int) // ranks of copy trees
	var next atomic.Int64
	var feeders sync.WaitGroup
	for range min(2*r.opts.Workers+2, len(trees)) {
		feeders.Add(1)
		g.Go(func() error {
			defer feeders.Done()
			for ctx.Err() == nil {
				rank := int(next.Add(1) - 1)
				if rank >= len(trees) {
					return nil
				}
				if small[rank] {
					select {
					case copies <- rank:
						continue
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				if err := run(trees[rank], rank); err != nil {
					return err
				}
			}
			return ctx.Err()
		})
	}
	go func() {
		feeders.Wait()
		close(copies)
	}()
	for range min(maxCopies, copyTrees) {
		g.Go(func() error {
			for rank := range copies {
				if err := run(trees[rank], rank); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// isSmallCopy reports whether a tree only hands its source file's
// reference to sinks that gather such writes (no op, every leaf at the root
// of a tensor with a location), for a tensor of at most smallCopy bytes.
func isSmallCopy(t *plan.Tree) bool {
	if t.Tensor.Location == nil || t.Tensor.Size > smallCopy || len(t.Root.Children) > 0 || len(t.Root.Leaves) == 0 {
		return false
	}
	for _, l := range t.Root.Leaves {
		if !plugin.GathersFileWrites(l.Sink.Sink) {
			return false
		}
	}
	return true
}

// isSmallStream reports whether a tree converts a tensor of at most
// smallCopy bytes in one chunk for sinks that all gather such writes: the
// converted bytes whole in one chunk (plugin.DataWriteGatherer), and the
// source's file reference for a leaf at the root of a tensor that has one.
func isSmallStream(t *plan.Tree, slot uint64) bool {
	if t.Tensor.Size > smallCopy || len(t.Root.Children) == 0 {
		return false
	}
	if lay := planLayout(t, slot); lay.chunk == 0 || t.Tensor.Size > lay.chunk {
		return false
	}
	for _, l := range t.Root.Leaves {
		if t.Tensor.Location != nil && !plugin.GathersFileWrites(l.Sink.Sink) || t.Tensor.Location == nil && !plugin.GathersDataWrites(l.Sink.Sink) {
			return false
		}
	}
	return belowLeaves(t.Root, func(_ *plan.Node, l plan.Leaf) bool { return plugin.GathersDataWrites(l.Sink.Sink) })
}

// writeFileLeaf hands leaf the file reference of its tree's tensor.
func writeFileLeaf(ctx context.Context, t *plan.Tree, leaf plan.Leaf) error {
	if err := leaf.Sink.Sink.Write(ctx, leaf.Name, plugin.FileData(*t.Tensor.Location)); err != nil {
		return &treeError{tree: t, leaf: &leaf, err: noSpace(leaf.Sink, err)}
	}
	return nil
}

func isOwnError(err error) bool {
	return !errors.Is(err, context.Canceled)
}

// treeError names the tensor a failure belongs to.
type treeError struct {
	tree *plan.Tree
	leaf *plan.Leaf
	err  error
}

func (e *treeError) Error() string {
	if e.leaf != nil {
		return fmt.Sprintf("%s: tensor %q: %v", e.leaf.Sink.Stage.Addr(), e.leaf.Name, e.err)
	}
	// Name the file the bytes came from: the tensor's own, or the source's.
	file := sourcePath(e.tree.Source)
	if l := e.tree.Tensor.Location; l != nil {
		file = l.Path
	}
	if file != "" && !strings.Contains(e.err.Error(), file) {
		return fmt.Sprintf("%s: %s: tensor %q: %v", e.tree.Source.Addr(), file, e.tree.Tensor.Name, e.err)
	}
	return fmt.Sprintf("%s: tensor %q: %v", e.tree.Source.Addr(), e.tree.Tensor.Name, e.err)
}

// sourcePath returns a source stage's path attribute, when it has a plain
// (not sensitive) string one.
func sourcePath(st *pipeline.Stage) string {
	if st == nil || st.IsSensitive("path") {
		return ""
	}
	p, _ := st.StringAttr("path")
	return p
}

func (e *treeError) Unwrap() error { return e.err }

// layout is how a tree's bytes are cut.
type layout struct {
	chunk   uint64 // root bytes per chunk; 0 for whole-tensor processing
	align   uint64 // every chunk is a multiple of align root bytes
	nodes   int    // nodes with an op
	streams bool   // some leaf needs the root's bytes streamed
}

// chunkTarget is the most bytes a chunk of any node holds when the ops'
// units allow it, however large the slots: the slots stay large so that an
// op whose unit is larger (a permute of a wide model's heads) still
// streams, but a chunk that fills only the first MiB of a slot touches only
// that MiB. Each process that maps the arena pays for the first touch of
// every page it uses, which on a virtual machine costs more than the copy
// (The arena's first touch, docs/performance.md); with 8 MiB chunks a
// quantizing run touched 100 MiB and more of the arena in each process,
// with chunks of 1 MiB a quarter of that. Smaller chunks also even out the
// cores' work at a tensor's end. A tree without ops (bytes streamed from a
// source plugin to sinks unchanged) keeps chunks of a slot: it holds few at
// once, and each chunk is a message to each plugin.
const chunkTarget = 1 << 20

// planLayout picks the root chunk size so that every chunk holds whole units
// of every op and no node's chunk exceeds a slot, nor, in a tree with ops,
// chunkTarget bytes where the units fit in that: then it holds the most
// whole units that do.
func planLayout(t *plan.Tree, slot uint64) layout {
	l := layout{align: 1}
	root := t.Root
	if len(root.Children) == 0 && t.Tensor.Location != nil {
		return l // every leaf takes the file reference
	}
	l.streams = true
	if root.Size == 0 {
		l.chunk = 1
		return l
	}
	// The units in root bytes and their least common multiple are exact
	// in 64 bits or too large: a chunk must then be the whole tensor.
	align, tooLarge := uint64(1), false
	maxRatioNum, maxRatioDen := uint64(1), uint64(1) // largest node size / root size
	whole := false
	var walk func(n *plan.Node)
	walk = func(n *plan.Node) {
		for _, c := range n.Children {
			l.nodes++
			in, _ := c.Op.UnitBytes()
			unit, ok := root.Size, true // in root bytes
			if in == 0 || n.Size == 0 || in >= n.Size {
				whole = whole || (in != 0 && in >= n.Size && n.Size > slot)
				if in < n.Size {
					unit = 1 // no unit: changes nothing
				}
			} else if hi, lo := bits.Mul64(in, root.Size); bits.Rem64(hi, lo, n.Size) != 0 {
				// in * rootSize / parentSize is no whole number of bytes: the
				// unit is the whole root
			} else if hi >= n.Size {
				ok = false // it needs more than 64 bits
			} else {
				unit, _ = bits.Div64(hi, lo, n.Size)
			}
			if !ok {
				tooLarge = true
			} else if !tooLarge {
				align, tooLarge = lcm(align, unit)
			}
			if c.Size*maxRatioDen > maxRatioNum*root.Size {
				maxRatioNum, maxRatioDen = c.Size, root.Size
			}
			walk(c)
		}
	}
	walk(root)
	if tooLarge || whole {
		return layout{chunk: 0, nodes: l.nodes, streams: true}
	}
	l.align = align
	// chunk * maxRatio ≤ bound → chunk ≤ bound * den / num
	chunkWithin := func(bound uint64) uint64 {
		limit := bound
		if hi, lo := bits.Mul64(bound, maxRatioDen); hi < maxRatioNum {
			limit, _ = bits.Div64(hi, lo, maxRatioNum)
		}
		return limit / l.align * l.align
	}
	chunk := chunkWithin(slot)
	if l.nodes > 0 {
		if target := chunkWithin(min(slot, chunkTarget)); target > 0 {
			chunk = target
		} else if chunk > l.align {
			chunk = l.align // a unit is more than chunkTarget: one per chunk
		}
	}
	if chunk == 0 {
		return layout{chunk: 0, nodes: l.nodes, streams: true}
	}
	l.chunk = chunk
	return l
}

// lcm returns the least common multiple of a and b, or a when either is 0;
// tooLarge when it needs more than 64 bits.
func lcm(a, b uint64) (m uint64, tooLarge bool) {
	if a == 0 || b == 0 {
		return a, false
	}
	g, y := a, b
	for y != 0 {
		g, y = y, g%y
	}
	hi, lo := bits.Mul64(a/g, b)
	return lo, hi != 0
}

// runTree streams one source tensor to every leaf of its tree.
// rank is the tree's place in the run: the lower, the sooner its ops get a
// core (rankGate).
func (r *runner) runTree(ctx context.Context, t *plan.Tree, rank int) error {
	if t.Tensor.Location != nil && len(t.Root.Leaves) == 1 && len(t.Root.Children) == 0 {
		// One sink takes the file reference: no goroutine of its own.
		if err := writeFileLeaf(ctx, t, t.Root.Leaves[0]); err != nil {
			return err
		}
		r.done(t, t.Tensor.Size)
		return nil
	}
	slot := uint64(r.opts.Arena.SlotSize())
	lay := planLayout(t, slot)
	if f, ok := oneChunkFeed(t, lay, r.opts.Arena.Slots()); ok {
		if err := r.runOneChunk(ctx, t, lay, f, rank); err != nil {
			return err
		}
		r.done(t, 0)
		return nil
	}
	g, ctx := errgroup.WithContext(ctx)

	// Leaves at the root of a file-backed tensor take the file reference.
	var streamLeaves []plan.Leaf
	for _, leaf := range t.Root.Leaves {
		if t.Tensor.Location != nil {
			g.Go(func() error { return writeFileLeaf(ctx, t, leaf) })
			continue
		}
		streamLeaves = append(streamLeaves, leaf)
	}
	if len(t.Root.Children) == 0 && len(streamLeaves) == 0 {
		err := g.Wait()
		if err == nil {
			r.done(t, t.Tensor.Size)
		}
		return err
	}
	if lay.chunk == 0 {
		g.Go(func() error { return r.runWhole(ctx, t, streamLeaves, rank) })
	} else {
		g.Go(func() error { return r.runStream(ctx, t, lay, streamLeaves, rank) })
	}
	err := g.Wait()
	if err == nil {
		r.done(t, 0)
	}
	return err
}

func (r *runner) done(t *plan.Tree, n uint64) {
	if p := r.opts.Progress; p != nil {
		if n > 0 {
			p.Advance(n)
		}
		p.TensorDone(t.Tensor.Name)
	}
}

// openRoot starts reading the source tensor into chunks of the pool.
func (r *runner) openRoot(ctx context.Context, t *plan.Tree, pool *plugin.Pool, align, maxChunk uint64) (plugin.ChunkReader, error) {
	if loc := t.Tensor.Location; loc != nil {
		f, err := r.file(loc.Path)
		if err != nil {
			return nil, err
		}
		end := loc.Offset + loc.Length
		if size, ok := f.holds(loc.Offset, end); !ok || loc.Length != t.Tensor.Size {
			return nil, outsideFile(loc, &t.Tensor, size)
		}
		sr := &sectionReader{SectionReader: io.NewSectionReader(f, int64(loc.Offset), int64(loc.Length)), file: f, loc: loc, tensor: &t.Tensor}
		return plugin.ReadChunks(sr, t.Tensor.Size, pool, int(align), int(maxChunk)), nil
	}
	src := r.opts.Sources[t.Source]
	if cs, ok := src.(plugin.ChunkSource); ok {
		return cs.OpenChunks(ctx, t.Tensor.Name, pool, int(align), int(maxChunk))
	}
	rc, err := src.Open(ctx, t.Tensor.Name)
	if err != nil {
		return nil, err
	}
	return plugin.ReadChunks(rc, t.Tensor.Size, pool, int(align), int(maxChunk)), nil
}

// outsideFile is the error of a tensor whose bytes the file at loc does not
// hold, the file being size bytes long.
func outsideFile(loc *tensor.FileRef, t *tensor.TensorInfo, size int64) error {
	return &plugin.InputError{File: loc.Path, Tensor: t.Name,
		Msg: fmt.Sprintf("bytes [%d, %d) of a %d-byte tensor lie outside the file of %d bytes", loc.Offset, loc.Offset+loc.Length, t.Size, size)}
}

// sectionReader reads a tensor's bytes from a source file. A file that ends
// before them, cut short since the run looked at its size, is the same
// InputError as one that was too short from the start.
type sectionReader struct {
	*io.SectionReader
	file   *sourceFile
	loc    *tensor.FileRef
	tensor *tensor.TensorInfo
}

func (r *sectionReader) Read(p []byte) (int, error) {
	n, err := r.SectionReader.Read(p)
	if err == io.EOF {
		if at, _ := r.Seek(0, io.SeekCurrent); at < r.Size() {
			return n, outsideFile(r.loc, r.tensor, r.file.lookAgain())
		}
	}
	return n, err
}

// bundle is one root chunk and everything computed from it.
type bundle struct {
	seq  int
	root *plugin.Chunk
	out  map[*plan.Node]*plugin.Chunk
	err  error
	// ahead is what the chunk holds of the read-ahead (runner.ahead) until
	// its first op has a core.
	ahead aheadHold
}

func (b *bundle) release() {
	b.ahead.drop()
	if b.root != nil {
		b.root.Release()
	}
	for _, c := range b.out {
		c.Release()
	}
}

// aheadHold is a share of the read-ahead taken for a chunk about to be read.
type aheadHold struct {
	gate *rankGate
	n    int
}

// holdAhead waits for the read-ahead to take n more bytes at the tree's
// rank, for a chunk of a tree with ops; a tree without ops reads only for
// its sinks and holds none.
func (r *runner) holdAhead(ctx context.Context, lay layout, n uint64, rank int) (aheadHold, error) {
	if lay.nodes == 0 {
		return aheadHold{}, nil
	}
	w := int(min(n, uint64(r.ahead.size)))
	if err := r.ahead.AcquireN(ctx, rank, w); err != nil {
		return aheadHold{}, err
	}
	return aheadHold{gate: r.ahead, n: w}, nil
}

// readAheadChunks is how many chunks (of chunkTarget bytes, or a slot's
// when slots are smaller) the trees of a run may read ahead of the cores:
// one for every two workers, at least one. Reading a chunk from the page
// cache takes a fraction of the time an op works on it, so one chunk
// waiting per two cores keeps them busy; with one per core, the in-process
// q8_0 conversion of the benchmark took 1.42 s, with one per two 1.13 s
// (docs/performance.md, Touching fewer slots).
func readAheadChunks(workers int) int { return max(1, workers/2) }

// drop gives the share back, once.
func (h *aheadHold) drop() {
	if h.n > 0 {
		h.gate.ReleaseN(h.n)
		h.n = 0
	}
}

// leafFeed delivers chunks to one sink's Write.
type leafFeed struct {
	leaf plan.Leaf
	node *plan.Node
	ch   chan *plugin.Chunk
}

// chanReader reads a leaf's chunks from its channel.
type chanReader struct {
	ch <-chan *plugin.Chunk
}

func (c *chanReader) NextChunk(ctx context.Context) (*plugin.Chunk, error) {
	select {
	case ch, ok := <-c.ch:
		if !ok {
			return nil, io.EOF
		}
		return ch, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *chanReader) Close() error { return nil }

// drain releases whatever is left in a channel after its reader stopped.
func drain(ch <-chan *plugin.Chunk) {
	for c := range ch {
		c.Release()
	}
}

func (r *runner) startLeaves(ctx context.Context, g *errgroup.Group, t *plan.Tree, feeds []*leafFeed) {
	for _, f := range feeds {
		f := f
		g.Go(func() error {
			data := plugin.NewChunkData(ctx, f.node.Size, &chanReader{ch: f.ch}, nil)
			err := noSpace(f.leaf.Sink, f.leaf.Sink.Sink.Write(ctx, f.leaf.Name, data))
			data.Close()
			go drain(f.ch)
			if err != nil {
				return &treeError{tree: t, leaf: &f.leaf, err: err}
			}
			if data.Consumed() != f.node.Size {
				return &treeError{tree: t, leaf: &f.leaf, err: fmt.Errorf("the sink took %d of the tensor's %d bytes", data.Consumed(), f.node.Size)}
			}
			return nil
		})
	}
}

// feeds lists the leaves that receive streamed chunks.
func feedsOf(t *plan.Tree, rootLeaves []plan.Leaf) []*leafFeed {
	var out []*leafFeed
	for _, l := range rootLeaves {
		out = append(out, &leafFeed{leaf: l, node: t.Root, ch: make(chan *plugin.Chunk, 2)})
	}
	belowLeaves(t.Root, func(n *plan.Node, l plan.Leaf) bool {
		out = append(out, &leafFeed{leaf: l, node: n, ch: make(chan *plugin.Chunk, 2)})
		return true
	})
	return out
}

// belowLeaves calls f with every leaf of every node below n, and its node,
// until f returns false; it reports whether f never did.
func belowLeaves(n *plan.Node, f func(*plan.Node, plan.Leaf) bool) bool {
	for _, c := range n.Children {
		for _, l := range c.Leaves {
			if !f(c, l) {
				return false
			}
		}
		if !belowLeaves(c, f) {
			return false
		}
	}
	return true
}

// oneChunkFeed returns the only leaf of a small tree (at most smallCopy
// bytes) that streams in one chunk and writes to one leaf, which
// runOneChunk runs. A larger tensor's work outweighs the goroutines of
// runStream, which also overlaps the start of its write with reading and
// converting it.
func oneChunkFeed(t *plan.Tree, lay layout, slots int) (*leafFeed, bool) {
	if lay.chunk == 0 || t.Tensor.Size == 0 || t.Tensor.Size > smallCopy || t.Tensor.Size > lay.chunk || 1+lay.nodes > slots {
		return nil, false
	}
	if len(t.Root.Leaves) > 0 {
		// A leaf at the root of a file takes its reference; of a tensor
		// without one it must be the only leaf.
		if len(t.Root.Leaves) > 1 || t.Tensor.Location != nil || len(t.Root.Children) > 0 {
			return nil, false
		}
		return &leafFeed{leaf: t.Root.Leaves[0], node: t.Root}, true
	}
	var found *leafFeed
	only := belowLeaves(t.Root, func(n *plan.Node, l plan.Leaf) bool {
		if found != nil {
			return false
		}
		found = &leafFeed{leaf: l, node: n}
		return true
	})
	return found, only && found != nil
}

// runOneChunk runs a tree whose tensor is one chunk and which has one leaf
// (oneChunkFeed) in the calling goroutine: what runStream does with a
// reader, workers, an emitter and a writer of its own, which for a model
// of tens of thousands of small tensors cost more than the work.
func (r *runner) runOneChunk(ctx context.Context, t *plan.Tree, lay layout, f *leafFeed, rank int) error {
	pool, err := r.opts.Arena.Reserve(ctx, 1+lay.nodes)
	if err != nil {
		return err
	}
	defer pool.Close()
	ahead, err := r.holdAhead(ctx, lay, t.Tensor.Size, rank)
	if err != nil {
		return err
	}
	defer ahead.drop()
	cr, err := r.openRoot(ctx, t, pool, lay.align, lay.chunk)
	if err != nil {
		return &treeError{tree: t, err: err}
	}
	root, err := cr.NextChunk(ctx)
	cr.Close()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return &treeError{tree: t, err: err}
	}
	b := &bundle{root: root, out: map[*plan.Node]*plugin.Chunk{}, ahead: ahead}
	ahead = aheadHold{} // the bundle drops it
	if err := r.apply(ctx, pool, t.Root, root, b, rank); err != nil {
		b.release()
		return &treeError{tree: t, err: err}
	}
	n := uint64(len(root.Data))
	c := root
	if f.node != t.Root {
		c = b.out[f.node]
	}
	c.Retain()
	b.release()
	if len(c.Data) <= plugin.GatherInlineBelow && plugin.GathersDataWrites(f.leaf.Sink.Sink) {
		// The sink gathers small writes into messages: the output moves to
		// a piece of a slot shared with other small outputs, and the tree's
		// own slots go back now, not once the write is confirmed, so that
		// the arena does not bound how many small trees wait for a message
		// at once. Taking a piece never waits (a tree holding slots must
		// not wait for more); without one the output stays where it is.
		if piece, ok := r.pieces.TryGet(len(c.Data)); ok {
			copy(piece.Data, c.Data)
			c.Release()
			pool.Close()
			c = piece
		}
	}
	data := plugin.NewChunkData(ctx, f.node.Size, plugin.SingleChunk(c), nil)
	err = noSpace(f.leaf.Sink, f.leaf.Sink.Sink.Write(ctx, f.leaf.Name, data))
	data.Close()
	if err != nil {
		return &treeError{tree: t, leaf: &f.leaf, err: err}
	}
	if data.Consumed() != f.node.Size {
		return &treeError{tree: t, leaf: &f.leaf, err: fmt.Errorf("the sink took %d of the tensor's %d bytes", data.Consumed(), f.node.Size)}
	}
	if p := r.opts.Progress; p != nil {
		p.Advance(n)
	}
	return nil
}

// runStream processes a tree chunk by chunk: a reader, workers applying ops
// in parallel, and an emitter delivering chunks to each sink in order.
func (r *runner) runStream(ctx context.Context, t *plan.Tree, lay layout, rootLeaves []plan.Leaf, rank int) error {
	feeds := feedsOf(t, rootLeaves)
	chunks := (t.Tensor.Size + lay.chunk - 1) / lay.chunk
	workers := 1
	if lay.nodes > 0 && chunks > 1 {
		workers = int(min(uint64(r.opts.Workers), chunks))
	}
	// At most inFlight chunks are between the reader and the emitter, each
	// with one slot per node; sinks hold a few more while they write. One
	// chunk's worth is enough to make progress (sinks release what they hold
	// without waiting for us), so parallelism and slack shrink to fit.
	perChunk := 1 + lay.nodes
	slots := r.opts.Arena.Slots()
	if perChunk > slots {
		slotSize := uint64(r.opts.Arena.SlotSize())
		return &treeError{tree: t, err: fmt.Errorf("needs %d arena slots of %s at once (%d chained ops), the arena has %d; raise --max-memory to %s or more",
			perChunk, bytesize.Human(slotSize), lay.nodes, slots, budgetFor(uint64(perChunk)*slotSize, 3))}
	}
	inFlight := min(workers+1, slots/perChunk)
	workers = max(1, min(workers, inFlight))
	need := min(perChunk*inFlight+2*len(feeds), slots)
	tickets := make(chan struct{}, inFlight)
	pool, err := r.opts.Arena.Reserve(ctx, need)
	if err != nil {
		return err
	}
	defer pool.Close()

	g, ctx := errgroup.WithContext(ctx)
	r.startLeaves(ctx, g, t, feeds)

	cr, err := r.openRoot(ctx, t, pool, lay.align, lay.chunk)
	if err != nil {
		for _, f := range feeds {
			close(f.ch)
		}
		g.Wait()
		return &treeError{tree: t, err: err}
	}
	defer cr.Close()

	in := make(chan *bundle, workers)
	out := make(chan *bundle, workers)
	// Reader.
	g.Go(func() error {
		defer close(in)
		left := t.Tensor.Size
		for seq := 0; ; seq++ {
			select {
			case tickets <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			ahead, err := r.holdAhead(ctx, lay, min(lay.chunk, left), rank)
			if err != nil {
				return err
			}
			c, err := cr.NextChunk(ctx)
			if err != nil {
				ahead.drop()
				if err == io.EOF {
					return nil
				}
				return &treeError{tree: t, err: err}
			}
			left -= min(left, uint64(len(c.Data)))
			select {
			case in <- &bundle{seq: seq, root: c, ahead: ahead}:
			case <-ctx.Done():
				ahead.drop()
				c.Release()
				return ctx.Err()
			}
		}
	})
	// Workers.
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		g.Go(func() error {
			defer wg.Done()
			for b := range in {
				b.out = map[*plan.Node]*plugin.Chunk{}
				b.err = r.apply(ctx, pool, t.Root, b.root, b, rank)
				select {
				case out <- b:
				case <-ctx.Done():
					b.release()
					return ctx.Err()
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		wg.Wait()
		close(out)
		return nil
	})
	// Emitter: in order.
	g.Go(func() error {
		defer func() {
			for _, f := range feeds {
				close(f.ch)
			}
		}()
		pending := map[int]*bundle{}
		next := 0
		defer func() {
			for _, b := range pending {
				b.release()
			}
		}()
		for b := range out {
			if b.err != nil {
				b.release()
				return &treeError{tree: t, err: b.err}
			}
			pending[b.seq] = b
			for {
				b, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				next++
				n := uint64(len(b.root.Data))
				for _, f := range feeds {
					c := b.root
					if f.node != t.Root {
						c = b.out[f.node]
					}
					c.Retain()
					select {
					case f.ch <- c:
					case <-ctx.Done():
						c.Release()
						b.release()
						return ctx.Err()
					}
				}
				b.release()
				<-tickets
				if p := r.opts.Progress; p != nil {
					p.Advance(n)
				}
			}
		}
		return nil
	})
	return g.Wait()
}

// apply computes every child of node from its chunk, recursively, its ops
// taking a core at the tree's rank.
func (r *runner) apply(ctx context.Context, pool *plugin.Pool, node *plan.Node, in *plugin.Chunk, b *bundle, rank int) error {
	for _, c := range node.Children {
		inUnit, outUnit := c.Op.UnitBytes()
		units := uint64(len(in.Data)) / inUnit
		if units*inUnit != uint64(len(in.Data)) {
			return fmt.Errorf("internal: chunk of %d bytes is not a whole number of %d-byte units for %s", len(in.Data), inUnit, c.Op)
		}
		dst, err := r.coreAndSlot(ctx, pool, rank)
		b.ahead.drop() // the chunk is being worked on
		if err != nil {
			return err
		}
		dst.Data = dst.Data[:units*outUnit]
		dst.Prefault(len(dst.Data))
		dst.Offset = in.Offset / inUnit * outUnit
		err = c.Op.Apply(dst.Data, in.Data)
		r.cpu.Release()
		b.out[c] = dst
		if err != nil {
			return fmt.Errorf("%s: %w", c.Op, err)
		}
		if err := r.apply(ctx, pool, c, dst, b, rank); err != nil {
			return err
		}
	}
	return nil
}

// coreAndSlot takes a core at the tree's rank and a slot of its pool for an
// op's output, holding neither while it waits for the other: the core
// first, so that the trees waiting for a core do not each hold a slot
// meanwhile (every slot held at once is one more whose pages the run
// touches), then the slot if one is free, else the core goes back while
// the tree's sinks free one.
func (r *runner) coreAndSlot(ctx context.Context, pool *plugin.Pool, rank int) (*plugin.Chunk, error) {
	if err := r.cpu.Acquire(ctx, rank); err != nil {
		return nil, err
	}
	if dst, ok := pool.TryGet(); ok {
		return dst, nil
	}
	r.cpu.Release()
	dst, err := pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.cpu.Acquire(ctx, rank); err != nil {
		dst.Release()
		return nil, err
	}
	return dst, nil
}

// budgetFor returns the --max-memory that gives a part of quarters/4 of the
// budget (the arena is three quarters, whole-tensor ops get one) at least
// need bytes, rounded up to a whole MiB or GiB.
func budgetFor(need uint64, quarters uint64) string {
	total := (need*4 + quarters - 1) / quarters
	if total >= 1<<30 {
		return fmt.Sprintf("%dGiB", (total+1<<30-1)>>30)
	}
	return fmt.Sprintf("%dMiB", (total+1<<20-1)>>20)
}

// runWhole processes a tree whose ops need the whole tensor at once, in heap
// memory taken from the byte budget.
func (r *runner) runWhole(ctx context.Context, t *plan.Tree, rootLeaves []plan.Leaf, rank int) error {
	need := t.Root.Size
	var walk func(n *plan.Node)
	walk = func(n *plan.Node) {
		for _, c := range n.Children {
			need += c.Size
			walk(c)
		}
	}
	walk(t.Root)
	if need > r.opts.HeapBudget {
		return &treeError{tree: t, err: fmt.Errorf("the ops on this tensor need it whole: %s, more than the %s the memory budget leaves outside the arena; raise --max-memory to %s or more",
			bytesize.Human(need), bytesize.Human(r.opts.HeapBudget), budgetFor(need, 1))}
	}
	if err := r.heap.Acquire(ctx, int64(need)); err != nil {
		return err
	}
	defer r.heap.Release(int64(need))

	feeds := feedsOf(t, rootLeaves)
	pool, err := r.opts.Arena.Reserve(ctx, min(2+2*len(feeds), r.opts.Arena.Slots()))
	if err != nil {
		return err
	}
	defer pool.Close()

	root := make([]byte, t.Root.Size)
	cr, err := r.openRoot(ctx, t, pool, 1, 0)
	if err != nil {
		return &treeError{tree: t, err: err}
	}
	for {
		c, err := cr.NextChunk(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			cr.Close()
			return &treeError{tree: t, err: err}
		}
		copy(root[c.Offset:], c.Data)
		c.Release()
	}
	cr.Close()
	bufs := map[*plan.Node][]byte{t.Root: root}
	var compute func(n *plan.Node) error
	compute = func(n *plan.Node) error {
		for _, c := range n.Children {
			dst := make([]byte, c.Size)
			if err := r.cpu.Acquire(ctx, rank); err != nil {
				return err
			}
			err := c.Op.Apply(dst, bufs[n])
			r.cpu.Release()
			if err != nil {
				return fmt.Errorf("%s: %w", c.Op, err)
			}
			bufs[c] = dst
			if err := compute(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := compute(t.Root); err != nil {
		return &treeError{tree: t, err: err}
	}
	g, ctx := errgroup.WithContext(ctx)
	r.startLeaves(ctx, g, t, feeds)
	g.Go(func() error {
		defer func() {
			for _, f := range feeds {
				close(f.ch)
			}
		}()
		for _, f := range feeds {
			buf := bufs[f.node]
			for off := 0; off < len(buf); {
				c, err := pool.Get(ctx)
				if err != nil {
					return err
				}
				c.Prefault(len(buf) - off)
				n := copy(c.Data, buf[off:])
				c.Data = c.Data[:n]
				c.Offset = uint64(off)
				select {
				case f.ch <- c:
				case <-ctx.Done():
					c.Release()
					return ctx.Err()
				}
				off += n
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	if p := r.opts.Progress; p != nil {
		p.Advance(t.Root.Size)
	}
	return nil
}
