package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/sdk/detached"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// racyWindow is how close to its hashing a file's modification time may be
// before the time stops proving anything: a file changed again within the
// same timestamp tick (a second on some file systems) keeps its time. Such a
// record gets no time, so the next check reads the file (git's "racy clean"
// rule).
const racyWindow = 2 * time.Second

// hashFile reads a file and returns its size, SHA-256 and modification
// time. A file that changes while it is read is an error.
func hashFile(path string) (FileRecord, error) {
	return hashFileBehind(context.Background(), path, nil)
}

// hashFileBehind is hashFile reading the file no further than front lets
// it (nil: no limit).
func hashFileBehind(ctx context.Context, path string, front *readFront) (FileRecord, error) {
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return FileRecord{}, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return FileRecord{}, err
	}
	var r io.Reader = f
	if front != nil {
		r = &pacedReader{ctx: ctx, f: f, path: path, size: before.Size(), front: front}
	}
	sum, n, err := detached.DigestReader(r)
	if err != nil {
		return FileRecord{}, fmt.Errorf("hashing %s: %w", path, err)
	}
	after, err := os.Stat(path)
	if err != nil {
		return FileRecord{}, err
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || n != uint64(before.Size()) {
		return FileRecord{}, fmt.Errorf("%s changed while it was hashed", path)
	}
	rec := FileRecord{Path: path, Size: n, SHA256: sum}
	if before.ModTime().Before(start.Add(-racyWindow)) {
		rec.ModTime = formatTime(before.ModTime())
	}
	return rec, nil
}

// DigestCache holds file digests recorded by earlier runs, by absolute path:
// a file whose size and modification time are the recorded ones is not read
// again.
type DigestCache map[string]FileRecord

// Add records the inputs of a manifest.
func (c DigestCache) Add(m *Manifest) {
	for _, r := range m.Inputs {
		if r.SHA256 != "" && r.ModTime != "" {
			c[r.Path] = r
		}
	}
}

// lookup returns the cached record of path when the file still has its
// size and modification time.
func (c DigestCache) lookup(path string, fi os.FileInfo) (FileRecord, bool) {
	r, ok := c[path]
	if !ok || r.Size != uint64(fi.Size()) || !sameTime(r.ModTime, fi.ModTime()) {
		return FileRecord{}, false
	}
	return r, true
}

// digestOrStat returns a file's record: from the cache when its size and
// time match, else by reading it (behind front, nil: no limit) when hash is
// set, else its size and time only.
func digestOrStat(ctx context.Context, path string, cache DigestCache, hash bool, front *readFront) (FileRecord, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return FileRecord{}, err
	}
	if r, ok := cache.lookup(path, fi); ok {
		return r, nil
	}
	if !hash {
		return FileRecord{Path: path, Size: uint64(fi.Size()), ModTime: formatTime(fi.ModTime())}, nil
	}
	return hashFileBehind(ctx, path, front)
}

// InputDigests computes input records in the background, while the run
// proceeds.
type InputDigests struct {
	front *readFront
	done  chan struct{}
	recs  []FileRecord
	err   error
}

// DigestInputs starts recording the given files: every file gets its size
// and time, the files in hash get their SHA-256 too (from cache when their
// size and time match). The digest of a file in paced reads it no further
// than the run has (Read), until RunEnded. workers bounds the files read at
// once (default 1, so hashing takes one core from the run at most).
func DigestInputs(ctx context.Context, files []string, hash, paced map[string]bool, cache DigestCache, workers int) *InputDigests {
	d := &InputDigests{front: newReadFront(paced), done: make(chan struct{})}
	if workers < 1 {
		workers = 1
	}
	go func() {
		defer close(d.done)
		recs := make([]FileRecord, len(files))
		errs := make([]error, len(files))
		var wg sync.WaitGroup
		sem := make(chan struct{}, workers)
		for i, f := range files {
			if ctx.Err() != nil {
				d.err = ctx.Err()
				break
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if recs[i], errs[i] = digestOrStat(ctx, f, cache, hash[f], d.front); errs[i] != nil {
					errs[i] = fmt.Errorf("input %w", errs[i])
				}
			}()
		}
		wg.Wait()
		if d.err != nil {
			return
		}
		for _, err := range errs {
			if err != nil {
				d.err = err
				return
			}
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].Path < recs[j].Path })
		d.recs = recs
	}()
	return d
}

// Read tells the digests that the run has read path up to offset end.
func (d *InputDigests) Read(path string, end int64) { d.front.advance(path, end) }

// RunEnded lets every digest read to the end of its file.
func (d *InputDigests) RunEnded() { d.front.release() }

// Wait returns the records, sorted by path. Call RunEnded first.
func (d *InputDigests) Wait() ([]FileRecord, error) {
	<-d.done
	return d.recs, d.err
}

// digestingSink fills in the SHA-256 of every file its sink commits that
// the sink did not report itself, so the detached signatures and the run
// manifest need not read the files again. It also tells the inputs'
// digests how far the run has read each input: a tensor written has been
// read from its source.
type digestingSink struct {
	plugin.Sink
	sources map[string]sourceEnd // by the name a tensor is written under
	inputs  *InputDigests
}

// GathersFileWrites forwards to the sink.
func (s digestingSink) GathersFileWrites() bool { return plugin.GathersFileWrites(s.Sink) }

// GathersDataWrites forwards to the sink.
func (s digestingSink) GathersDataWrites() bool { return plugin.GathersDataWrites(s.Sink) }

// sourceEnd is the input file a tensor is read from and where its bytes end
// there.
type sourceEnd struct {
	path string
	end  int64
}

// sourceEnds returns, for every sink of p, where each tensor it writes ends
// in the input file it is read from (tensors read from a file by location).
func sourceEnds(p *plan.Plan) map[*plan.SinkPlan]map[string]sourceEnd {
	ends := make(map[*plan.SinkPlan]map[string]sourceEnd, len(p.Sinks))
	for _, sk := range p.Sinks {
		ends[sk] = make(map[string]sourceEnd, len(sk.Final.Tensors))
	}
	var walk func(n *plan.Node, src sourceEnd)
	walk = func(n *plan.Node, src sourceEnd) {
		for _, l := range n.Leaves {
			if ends[l.Sink] == nil {
				ends[l.Sink] = map[string]sourceEnd{}
			}
			ends[l.Sink][l.Name] = src
		}
		for _, c := range n.Children {
			walk(c, src)
		}
	}
	abs := absPaths{}
	for _, t := range p.Trees {
		loc := t.Tensor.Location
		if loc == nil || t.Root == nil {
			continue
		}
		if path, ok := abs.of(loc.Path); ok {
			walk(t.Root, sourceEnd{path: path, end: int64(loc.Offset + loc.Length)})
		}
	}
	return ends
}

// absPaths remembers the absolute path of each path it was asked for: the
// tensors of one file are many, and filepath.Abs of a relative path asks
// the system for the working directory each time.
type absPaths map[string]string

// of returns path made absolute, and false when it cannot be.
func (a absPaths) of(path string) (string, bool) {
	if abs, ok := a[path]; ok {
		return abs, true
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	a[path] = abs
	return abs, true
}

// Write writes the tensor, then moves its input's read front past it.
func (d digestingSink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	if err := d.Sink.Write(ctx, name, data); err != nil {
		return err
	}
	if src, ok := d.sources[name]; ok {
		d.inputs.Read(src.path, src.end)
	}
	return nil
}

// Begin asks the sink for the digests itself (protocol 1.2): a sink that
// hashes as it writes saves reading every output back after its commit.
func (d digestingSink) Begin(ctx context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	opts.Digests = true
	return d.Sink.Begin(ctx, m, opts)
}

func (d digestingSink) Commit(ctx context.Context) ([]plugin.Artifact, error) {
	arts, err := d.Sink.Commit(ctx)
	if err != nil {
		return nil, err
	}
	if err := digestArtifacts(arts); err != nil {
		return nil, fmt.Errorf("the outputs were committed, but %w", err)
	}
	return arts, nil
}

// digestArtifacts hashes, several at once, the artifacts that carry no
// digest.
func digestArtifacts(arts []plugin.Artifact) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	errs := make([]error, len(arts))
	for i := range arts {
		if arts[i].SHA256 != "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := hashFile(arts[i].Path)
			if err != nil {
				errs[i] = err
				return
			}
			if arts[i].Size != 0 && arts[i].Size != r.Size {
				errs[i] = fmt.Errorf("%s has %d bytes, its sink reported %d", arts[i].Path, r.Size, arts[i].Size)
				return
			}
			arts[i].SHA256, arts[i].Size = r.SHA256, r.Size
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
