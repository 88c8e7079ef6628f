package run

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
)

// Recorder records one run and writes its run manifests.
//
// Inputs are hashed in the background while the run proceeds, one file at a
// time (one core at most), behind the run in the files it reads tensors
// from (readFront), reusing the digest an earlier manifest recorded for a
// file whose size and modification time did not change. Sinks are
// asked for the digests of their outputs (protocol 1.2), which the built-in
// ones compute while they write; an output whose sink reported none is
// hashed once, right after its commit. Detached signatures use the same
// digests.
type Recorder struct {
	prov      *Provenance
	full      *plan.Plan
	partition *Partition
	started   time.Time
	inputs    *InputDigests
	noFsync   bool
}

// SkipFsync writes the run manifests without syncing them, for a run whose
// outputs are not synced either (Options.NoFsync).
func (r *Recorder) SkipFsync() { r.noFsync = true }

// StartRecording prepares the manifests of a run of full — or, with part
// set, of the part of it that runPlan (the plan Assignment.Restrict
// returned) executes. It wraps runPlan's sinks so that every committed file
// gets its digest, and starts digesting the inputs: all of them for a whole
// run; for a partition, those its tensors come from, and, in partition 0,
// the ones no partition reads tensors from (side files, index files). Call
// it right before Execute.
func StartRecording(ctx context.Context, pv *Provenance, full, runPlan *plan.Plan, part *Partition, cache DigestCache) *Recorder {
	r := &Recorder{prov: pv, full: full, partition: part, started: time.Now().UTC()}
	files := pv.InputFiles(full)
	hash := map[string]bool{}
	if part == nil {
		for _, f := range files {
			hash[f] = true
		}
	} else {
		for f := range locationFiles(runPlan.Trees) {
			hash[f] = true
		}
		if part.Index == 0 {
			read := locationFiles(full.Trees)
			for _, f := range files {
				if !read[f] {
					hash[f] = true
				}
			}
		}
	}
	// The digest of a file the run reads tensors from follows the run
	// through it (readFront); the others are read at once.
	paced := locationFiles(runPlan.Trees)
	r.inputs = DigestInputs(ctx, files, hash, paced, cache, 1)
	ends := sourceEnds(runPlan)
	for _, sk := range runPlan.Sinks {
		sk.Sink = digestingSink{Sink: sk.Sink, sources: ends[sk], inputs: r.inputs}
	}
	return r
}

// Finish writes one run manifest per enabled sink of the full plan, beside
// its outputs (for a partition, the partition's manifest), once every output
// is committed. It returns the manifests' paths.
func (r *Recorder) Finish(res *Result) ([]string, error) {
	if err := r.prov.waitBinaries(); err != nil {
		return nil, fmt.Errorf("the outputs were committed, but the binaries could not be recorded: %w", err)
	}
	r.inputs.RunEnded()
	inputs, err := r.inputs.Wait()
	if err != nil {
		return nil, fmt.Errorf("the outputs were committed, but the inputs could not be recorded: %w", err)
	}
	finished := time.Now().UTC()
	arts := map[*pipeline.Stage]int{}
	for i, sa := range res.Artifacts {
		arts[sa.Stage] = i
	}
	var written []string
	for _, sk := range r.full.Sinks {
		path := ManifestPath(sk.Stage, sk.Plan)
		if path == "" {
			continue
		}
		m := r.prov.manifest(sk.Stage.Addr())
		m.Started, m.Finished, m.Inputs = r.started, finished, inputs
		if r.partition != nil {
			m.Partition = &PartitionRecord{Index: r.partition.Index, Count: r.partition.Count}
			path = PartitionManifestPath(path, *r.partition)
		}
		m.Outputs = []FileRecord{}
		if i, ok := arts[sk.Stage]; ok {
			if m.Outputs, err = outputRecords(path, res.Artifacts[i].Artifacts); err != nil {
				return written, fmt.Errorf("the outputs were committed, but %w", err)
			}
		}
		if err := writeManifest(path, m, !r.noFsync); err != nil {
			return written, fmt.Errorf("the outputs were committed, but the run manifest could not be written: %w", err)
		}
		written = append(written, path)
	}
	return written, nil
}

// Inputs returns the records of the run's inputs, once they are all
// recorded (Finish waits for them too).
func (r *Recorder) Inputs() ([]FileRecord, error) {
	r.inputs.RunEnded()
	return r.inputs.Wait()
}

// Cache gathers the input digests the existing manifests of p's sinks
// recorded (whole-run and partition manifests alike), for a new run to
// reuse.
func Cache(p *pipeline.Pipeline) DigestCache {
	c := DigestCache{}
	for _, st := range p.Stages {
		if !st.Enabled || st.Kind != pipeline.Sink {
			continue
		}
		path, ok := ManifestPathFromConfig(st)
		if !ok {
			continue
		}
		matches, _ := filepath.Glob(globEscape(stripSuffix(path)) + ".partition-*" + ManifestSuffix)
		for _, f := range append([]string{path}, matches...) {
			if m, err := ReadManifest(f); err == nil {
				c.Add(m)
			}
		}
	}
	return c
}

func stripSuffix(path string) string { return path[:len(path)-len(ManifestSuffix)] }

// globEscape escapes the glob metacharacters of a literal path.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
