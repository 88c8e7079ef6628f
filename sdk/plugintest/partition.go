package plugintest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Partitions checks a sink that declares SinkPlan.Partitions (protocol 1.1):
// a manifest whose tensors a shard stage spread over three shards is written
// once whole, and once as `sluice run --partition` does it — one sink per
// group of shards (BeginOptions.Shards), each receiving only its shards'
// tensors, then a sink begun with BeginOptions.Finalize that receives none.
// Both directories must hold the same files, byte for byte, and nothing
// temporary.
//
// It uses the suite's Plugin, Sink, File, SinkConfig, Metadata and first
// dtype; Source is not needed.
func Partitions(t *testing.T, s Suite) {
	t.Helper()
	if len(s.DTypes) == 0 {
		t.Fatal("the suite declares no dtype")
	}
	inst := plugin.InProcess(s.Plugin)
	m := &tensor.Manifest{}
	if s.Metadata != nil {
		m.Metadata = s.Metadata.Clone()
	}
	tensors := makeTensors(t, []tensor.DType{s.DTypes[0], s.DTypes[0], s.DTypes[0], s.DTypes[0], s.DTypes[0], s.DTypes[0]}, 2)
	data := map[string][]byte{}
	for i := range tensors {
		tt := &tensors[i]
		tt.info.Name = "layers." + string(rune('a'+i)) + ".weight"
		tt.info.SetAttr(tensor.AttrShard, tensor.FormatShard(i/2+1, 3))
		m.Tensors = append(m.Tensors, tt.info)
		data[tt.info.Name] = tt.data
	}
	ctx := context.Background()
	open := func(dir string) plugin.Sink {
		t.Helper()
		cfg, _, err := s.configs(filepath.Join(dir, s.File))
		if err != nil {
			t.Fatal(err)
		}
		sink, err := inst.OpenSink(ctx, s.Sink, cfg)
		if err != nil {
			t.Fatalf("opening sink: %v", err)
		}
		p, err := sink.Plan(ctx, m)
		if err != nil {
			t.Fatalf("sink plan: %v", err)
		}
		if !p.Partitions {
			t.Fatalf("the sink's plan does not declare Partitions")
		}
		if len(p.Convert) > 0 {
			t.Fatalf("the sink converts %s; use a dtype it keeps", p.Convert[0].Tensor)
		}
		return sink
	}
	// run writes the tensors of the given shards (all when nil) through one
	// sink begun with opts.
	run := func(dir string, opts plugin.BeginOptions, shards map[int]bool) {
		t.Helper()
		sink := open(dir)
		if err := sink.Begin(ctx, m, opts); err != nil {
			t.Fatalf("begin %+v: %v", opts, err)
		}
		if !opts.Finalize {
			for _, ti := range m.Tensors {
				i, _, _ := ti.Shard()
				if shards != nil && !shards[i] {
					continue
				}
				if err := sink.Write(ctx, ti.Name, plugin.BytesData(data[ti.Name])); err != nil {
					sink.Abort(ctx)
					t.Fatalf("writing %s (shard %d): %v", ti.Name, i, err)
				}
			}
		}
		if _, err := sink.Commit(ctx); err != nil {
			t.Fatalf("commit %+v: %v", opts, err)
		}
	}
	whole, parts := t.TempDir(), t.TempDir()
	run(whole, plugin.BeginOptions{}, nil)
	run(parts, plugin.BeginOptions{Shards: []int{1, 3}}, map[int]bool{1: true, 3: true})
	run(parts, plugin.BeginOptions{Shards: []int{2}}, map[int]bool{2: true})
	run(parts, plugin.BeginOptions{Finalize: true}, nil)

	want, got := dirFiles(t, whole), dirFiles(t, parts)
	for _, name := range sortedNames(want) {
		b, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: written by the whole run, missing after the partitioned runs", name)
		case !bytes.Equal(b, want[name]):
			t.Errorf("%s: the partitioned runs wrote other bytes than the whole run", name)
		}
	}
	for _, name := range sortedNames(got) {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: written by the partitioned runs only", name)
		}
	}
}

// dirFiles reads every file of a directory tree, by relative name.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedNames(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
