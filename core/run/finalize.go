package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Finalized is what Finalize did.
type Finalized struct {
	// Partitions is the partition count of the run.
	Partitions int
	// Result lists the files finalize wrote itself (indexes, side files and
	// their signatures), per split sink.
	Result *Result
	// Manifests are the run manifests written, one per sink.
	Manifests []string
}

// ErrAlreadyFinalized is returned when no partition manifest is left and
// every sink has the manifest of a finalized run.
var ErrAlreadyFinalized = errors.New("the run was already finalized")

// Finalize completes a partitioned run of pl (planned again, headers only,
// with the variables the partitions had). It reads the manifests every
// partition wrote beside every sink and checks that they ran this pipeline,
// with these variables, this sluice and these plugins, over the same
// inputs, and that the inputs and the partitions' outputs are still what
// they recorded. Then each sink whose shards were divided writes the files
// that describe its whole set (BeginOptions.Finalize: an index, side files),
// a sign stage upstream gets them signed, each sink's run manifest is
// written, listing every output of every partition, and the partition
// manifests are removed. The files are those a run on one machine writes,
// byte for byte.
func Finalize(ctx context.Context, pl *plan.Plan, pv *Provenance) (*Finalized, error) {
	type sinkParts struct {
		sk    *plan.SinkPlan
		path  string
		found map[Partition]*Manifest
		parts map[int]*Manifest // of the run's partition count
	}
	if err := pv.waitBinaries(); err != nil {
		return nil, err
	}
	var sinks []*sinkParts
	counts := map[int][]string{}
	for _, sk := range pl.Sinks {
		path := ManifestPath(sk.Stage, sk.Plan)
		if path == "" {
			continue
		}
		sp := &sinkParts{sk: sk, path: path, found: map[Partition]*Manifest{}}
		files, err := filepath.Glob(globEscape(stripSuffix(path)) + ".partition-*-of-*" + ManifestSuffix)
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		for _, f := range files {
			m, err := ReadManifest(f)
			if err != nil {
				return nil, err
			}
			if m.Partition == nil || m.Partition.Count < 1 || m.Partition.Index < 0 || m.Partition.Index >= m.Partition.Count ||
				f != PartitionManifestPath(path, Partition{Index: m.Partition.Index, Count: m.Partition.Count}) {
				return nil, &ManifestError{Path: f, Msg: "is not the manifest of a partition its name says"}
			}
			if m.Stage != sk.Stage.Addr() {
				return nil, &ManifestError{Path: f, Msg: fmt.Sprintf("records the outputs of %s, not %s", m.Stage, sk.Stage.Addr())}
			}
			sp.found[Partition{Index: m.Partition.Index, Count: m.Partition.Count}] = m
			counts[m.Partition.Count] = append(counts[m.Partition.Count], f)
		}
		sinks = append(sinks, sp)
	}
	if len(sinks) == 0 {
		return nil, plan.ErrNothingToDo
	}
	if len(counts) == 0 {
		done := true
		for _, sp := range sinks {
			if m, err := ReadManifest(sp.path); err != nil || m.Partitions == 0 {
				done = false
			}
		}
		if done {
			return nil, ErrAlreadyFinalized
		}
		return nil, fmt.Errorf("no partition manifest beside %s: run `sluice run --partition INDEX/COUNT` for every INDEX first", sinks[0].path)
	}
	if len(counts) > 1 {
		var desc []string
		for n, files := range counts {
			desc = append(desc, fmt.Sprintf("%d partitions (%s)", n, filepath.Base(files[0])))
		}
		sort.Strings(desc)
		return nil, fmt.Errorf("partition manifests of runs with different partition counts lie beside the outputs: %s; remove the stale ones", strings.Join(desc, ", "))
	}
	var n int
	for c := range counts {
		n = c
	}

	// Every partition, for every sink, ran this pipeline over the same inputs.
	inputs := map[string]FileRecord{}
	hashed := map[string]bool{}
	started := time.Time{}
	for _, sp := range sinks {
		byIndex := map[int]*Manifest{}
		for part, m := range sp.found {
			if part.Count == n {
				byIndex[part.Index] = m
			}
		}
		sp.parts = byIndex
		var missing []string
		for i := 0; i < n; i++ {
			if _, ok := byIndex[i]; !ok {
				missing = append(missing, fmt.Sprintf("%d/%d", i, n))
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s: no manifest from partition %s beside %s: that partition has not finished (or wrote elsewhere)", sp.sk.Stage.Addr(), strings.Join(missing, ", "), sp.path)
		}
		for i := 0; i < n; i++ {
			m := byIndex[i]
			label := PartitionManifestPath(sp.path, Partition{Index: i, Count: n})
			if r := pv.sameRun(m); r != "" {
				return nil, fmt.Errorf("%s: %s; rerun that partition", label, r)
			}
			if started.IsZero() || m.Started.Before(started) {
				started = m.Started
			}
			for _, in := range m.Inputs {
				prev, seen := inputs[in.Path]
				switch {
				case !seen:
					inputs[in.Path] = in
				case prev.Size != in.Size || (prev.SHA256 != "" && in.SHA256 != "" && prev.SHA256 != in.SHA256):
					return nil, fmt.Errorf("input %s differs between partitions (%s); every partition must read the same files", in.Path, filepath.Base(label))
				case prev.SHA256 == "":
					inputs[in.Path] = in
				}
				if in.SHA256 != "" {
					hashed[in.Path] = true
				}
			}
			for _, out := range m.Outputs {
				p := resolveOutput(label, out.Path)
				fi, err := os.Stat(p)
				if err != nil {
					return nil, fmt.Errorf("output %s of partition %d/%d is missing: %w", p, i, n, err)
				}
				if uint64(fi.Size()) != out.Size {
					return nil, fmt.Errorf("output %s of partition %d/%d has %d bytes, its manifest says %d", p, i, n, fi.Size(), out.Size)
				}
			}
		}
	}
	for _, f := range pv.InputFiles(pl) {
		if _, ok := inputs[f]; !ok {
			return nil, fmt.Errorf("input %s was not read by the partitions", f)
		}
	}
	merged := make([]FileRecord, 0, len(inputs))
	for path, in := range inputs {
		if !hashed[path] {
			return nil, fmt.Errorf("input %s was hashed by no partition", path)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", path, err)
		}
		if uint64(fi.Size()) != in.Size {
			return nil, fmt.Errorf("input %s changed since the partitions ran (%d bytes, was %d)", path, fi.Size(), in.Size)
		}
		if !sameTime(in.ModTime, fi.ModTime()) {
			now, err := hashFile(path)
			if err != nil {
				return nil, err
			}
			if now.SHA256 != in.SHA256 {
				return nil, fmt.Errorf("input %s changed since the partitions ran", path)
			}
			in.ModTime = now.ModTime
		}
		merged = append(merged, in)
	}
	sort.Slice(merged, func(i, j int) bool { return merged[i].Path < merged[j].Path })

	a, err := Assign(pl, n)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, sp := range sinks {
		if !a.Split(sp.sk) {
			continue
		}
		arts, err := finalizeSink(ctx, sp.sk)
		if err != nil {
			return nil, &plan.StageError{Stage: sp.sk.Stage, Err: err}
		}
		res.Artifacts = append(res.Artifacts, SinkArtifacts{Stage: sp.sk.Stage, Artifacts: arts})
	}

	out := &Finalized{Partitions: n, Result: res}
	finished := time.Now().UTC()
	for _, sp := range sinks {
		m := pv.manifest(sp.sk.Stage.Addr())
		m.Partitions, m.Started, m.Finished, m.Inputs = n, started, finished, merged
		m.Outputs = []FileRecord{}
		for i := 0; i < n; i++ {
			m.Outputs = append(m.Outputs, sp.parts[i].Outputs...)
		}
		sort.SliceStable(m.Outputs, func(i, j int) bool { return m.Outputs[i].Path < m.Outputs[j].Path })
		for _, sa := range res.Artifacts {
			if sa.Stage == sp.sk.Stage {
				recs, err := outputRecords(sp.path, sa.Artifacts)
				if err != nil {
					return out, err
				}
				m.Outputs = append(m.Outputs, recs...)
			}
		}
		if err := WriteManifest(sp.path, m); err != nil {
			return out, fmt.Errorf("the index files were written, but the run manifest could not be: %w", err)
		}
		out.Manifests = append(out.Manifests, sp.path)
	}
	for _, sp := range sinks {
		for i := 0; i < n; i++ {
			os.Remove(PartitionManifestPath(sp.path, Partition{Index: i, Count: n}))
		}
	}
	return out, nil
}

// sameRun reports how a partition's manifest differs from this run's
// pipeline, variables, sluice and plugins; "" when it does not.
func (pv *Provenance) sameRun(m *Manifest) string {
	switch {
	case m.Pipeline.Digest != pv.Pipeline.Digest:
		return "it ran another version of the pipeline"
	case m.SluiceSHA256 != pv.SluiceSHA256:
		return fmt.Sprintf("it ran another sluice binary (sluice %s; this is sluice %s)", m.Sluice, pv.Sluice)
	case !pv.sensitiveMatches(m.Pipeline.Sensitive):
		return "it ran with another value of a sensitive variable"
	}
	if r := compareVariables(m.Pipeline.Variables, pv.Pipeline.Variables); r != "" {
		return "it ran with another value of a variable: " + r
	}
	if r := comparePlugins(m.Plugins, pv.Plugins); r != "" {
		return "it ran other plugins: " + r
	}
	return ""
}

// finalizeSink asks a split sink for the files that describe its whole set,
// then signs them when a sign stage gave the sink a key.
func finalizeSink(ctx context.Context, sk *plan.SinkPlan) ([]plugin.Artifact, error) {
	sink := digestingSink{Sink: sk.Sink}
	opts := plugin.BeginOptions{SigningKey: sk.SigningKey, SigningKeyID: sk.SigningKeyID, Finalize: true}
	if err := sink.Begin(ctx, sk.Final, opts); err != nil {
		sink.Abort(context.WithoutCancel(ctx))
		return nil, err
	}
	arts, err := sink.Commit(ctx)
	if err != nil {
		sink.Abort(context.WithoutCancel(ctx))
		return nil, err
	}
	sigs, err := signDetached(sk, arts, true)
	if err != nil {
		return nil, err
	}
	return append(arts, sigs...), nil
}
