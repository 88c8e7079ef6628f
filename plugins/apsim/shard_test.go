package apsim

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/keyring"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func readIndexJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestShardBySize(t *testing.T) {
	c := sampleCheckpoint(t, 21)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.apsim")
	cfg := SinkConfig{Path: path, Shard: "200B"}
	s, _ := NewSink(&cfg)
	p, err := s.Plan(context.Background(), c.m)
	if err != nil {
		t.Fatal(err)
	}
	arts := mustSave(t, cfg, c)
	if len(arts) < 3 || len(p.Files) != len(arts) {
		t.Fatalf("%d artifacts, %d planned files", len(arts), len(p.Files))
	}
	n := len(arts) - 1
	for i, a := range arts[:n] {
		want := filepath.Join(dir, ShardName(path, i+1, n))
		if a.Path != want || p.Files[i].Path != want || p.Files[i].Size != a.Size {
			t.Errorf("shard %d: %+v, planned %+v, want %s", i+1, a, p.Files[i], want)
		}
		b, _ := os.ReadFile(a.Path)
		meta, _, _ := independentRead(t, b)
		if meta["shard"] != tensor.FormatShard(i+1, n) {
			t.Errorf("%s: shard = %q", a.Path, meta["shard"])
		}
		if (i > 0) != (meta["metadata"] == "{}") {
			t.Errorf("%s: metadata = %.40q; only the first shard carries it", a.Path, meta["metadata"])
		}
	}
	if arts[n].Path != filepath.Join(dir, "model.apsim.index.json") {
		t.Errorf("index at %s", arts[n].Path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("a sharded save also wrote NAME.apsim")
	}
	ix := readIndexJSON(t, arts[n].Path)
	md := ix["metadata"].(map[string]any)
	wm := ix["weight_map"].(map[string]any)
	if md["format"] != "apsi-model" || md["total_size"] == nil || len(md["shards"].([]any)) != n || wm["emb__qscale"] == nil || wm["emb"] != wm["emb__qscale"] {
		t.Errorf("index %v", ix)
	}
	// Read from the index and from any shard: the whole set.
	for _, from := range []string{arts[n].Path, arts[0].Path, arts[n-1].Path} {
		got, err := loadAll(t, SourceConfig{Path: from})
		if err != nil {
			t.Fatalf("from %s: %v", filepath.Base(from), err)
		}
		sameCheckpoint(t, got, c)
	}
}

func TestShardByAssignment(t *testing.T) {
	c := sampleCheckpoint(t, 22)
	for i := range c.m.Tensors {
		c.m.Tensors[i].SetAttr(tensor.AttrShard, tensor.FormatShard(1+i%3, 3))
	}
	path := tempPath(t, "m.apsim")
	arts := mustSave(t, SinkConfig{Path: path}, c)
	if len(arts) != 4 {
		t.Fatalf("%d artifacts, want 3 shards and an index", len(arts))
	}
	got, err := loadAll(t, SourceConfig{Path: IndexPath(path)})
	if err != nil {
		t.Fatal(err)
	}
	sameCheckpoint(t, got, c)
	for _, ti := range got.m.Tensors {
		want, _ := c.m.Tensor(ti.Name)
		i, _, _ := want.Shard()
		if ti.Location != nil && !strings.Contains(ti.Location.Path, ShardName(path, i, 3)) {
			t.Errorf("tensor %q is in %s, assigned to shard %d", ti.Name, ti.Location.Path, i)
		}
	}
	// All or none: a manifest with some tensors assigned is refused.
	delete(c.m.Tensors[0].Attrs, tensor.AttrShard)
	s, _ := NewSink(&SinkConfig{Path: tempPath(t, "x.apsim")})
	if _, err := s.Plan(context.Background(), c.m); err == nil || !strings.Contains(err.Error(), "shard assignment") {
		t.Errorf("partial assignment: %v", err)
	}
}

func TestMixedShardsAreDetected(t *testing.T) {
	a, b := sampleCheckpoint(t, 31), sampleCheckpoint(t, 32) // same names and shapes, other bytes
	dir := t.TempDir()
	other := t.TempDir()
	pa, pb := filepath.Join(dir, "m.apsim"), filepath.Join(other, "m.apsim")
	artsA := mustSave(t, SinkConfig{Path: pa, Shard: "300B"}, a)
	artsB := mustSave(t, SinkConfig{Path: pb, Shard: "300B"}, b)
	if len(artsA) != len(artsB) || len(artsA) < 3 {
		t.Fatalf("sets of %d and %d files", len(artsA), len(artsB))
	}
	// Swap shard 2 of A for shard 2 of B: same name, same tensor names.
	bb, _ := os.ReadFile(artsB[1].Path)
	os.WriteFile(artsA[1].Path, bb, 0o644)
	no := false
	for _, cfg := range []SourceConfig{{Path: IndexPath(pa)}, {Path: IndexPath(pa), Verify: &no}, {Path: artsA[0].Path, Verify: &no}} {
		_, err := loadAll(t, cfg)
		if !errors.Is(err, ErrMixedShards) || !plugin.IsBadInput(err) {
			t.Errorf("mixed set from %s (verify %v): %v", filepath.Base(cfg.Path), cfg.Verify, err)
		}
	}
	if _, err := Verify(context.Background(), IndexPath(pa), nil); !errors.Is(err, ErrMixedShards) {
		t.Errorf("Verify of a mixed set: %v", err)
	}
	// A shard renamed into another position is caught too.
	c := sampleCheckpoint(t, 33)
	pc := filepath.Join(t.TempDir(), "m.apsim")
	artsC := mustSave(t, SinkConfig{Path: pc, Shard: "300B"}, c)
	s1, _ := os.ReadFile(artsC[0].Path)
	s2, _ := os.ReadFile(artsC[1].Path)
	os.WriteFile(artsC[0].Path, s2, 0o644)
	os.WriteFile(artsC[1].Path, s1, 0o644)
	if _, err := loadAll(t, SourceConfig{Path: IndexPath(pc), Verify: &no}); !errors.Is(err, ErrMixedShards) {
		t.Errorf("swapped shards: %v", err)
	}
}

func TestSignedSet(t *testing.T) {
	c := sampleCheckpoint(t, 41)
	path := tempPath(t, "m.apsim")
	arts := mustSave(t, SinkConfig{Path: path, Shard: "300B", Key: "set secret"}, c)
	idx := arts[len(arts)-1].Path
	if _, err := loadAll(t, SourceConfig{Path: idx, Key: []byte(`"set secret"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := loadAll(t, SourceConfig{Path: arts[0].Path, Key: []byte(`"set secret"`)}); err != nil {
		t.Fatalf("signed set from a shard: %v", err)
	}
	if _, err := loadAll(t, SourceConfig{Path: idx, Key: []byte(`"wrong"`)}); !errors.Is(err, ErrSignature) {
		t.Errorf("wrong key: %v", err)
	}
	k, _ := keyring.Shared("set secret")
	if r, err := Verify(context.Background(), idx, k); err != nil || !r.SignatureChecked || len(r.Files) != len(arts)-1 || r.Index != idx {
		t.Errorf("Verify: %+v %v", r, err)
	}
	// Edits to the index after signing: the signature no longer matches,
	// or the set no longer holds together.
	orig, _ := os.ReadFile(idx)
	edit := func(from, to string) []byte { return []byte(strings.Replace(string(orig), from, to, 1)) }
	os.WriteFile(idx, edit(`"apsi": "sluice-apsim`, `"apsi": "sluice-apsiM`), 0o644)
	if _, err := loadAll(t, SourceConfig{Path: idx, Key: []byte(`"set secret"`)}); err == nil {
		t.Error("an edited index loads")
	}
	var ix index
	json.Unmarshal(orig, &ix)
	ix.Metadata.KeyID = "user key"
	b, _ := ix.encode()
	os.WriteFile(idx, b, 0o644)
	if _, err := loadAll(t, SourceConfig{Path: idx, Key: []byte(`"set secret"`)}); !errors.Is(err, ErrSignature) {
		t.Errorf("index with another key_id: %v", err)
	}
	ix.Metadata.KeyID, ix.Metadata.Signature = "", ""
	b, _ = ix.encode()
	os.WriteFile(idx, b, 0o644)
	if _, err := loadAll(t, SourceConfig{Path: idx, Key: []byte(`"set secret"`)}); !errors.Is(err, ErrUnsigned) {
		t.Errorf("index with the signature removed: %v", err)
	}
	if _, err := loadAll(t, SourceConfig{Path: idx}); err != nil {
		t.Errorf("unsigned index without a key: %v", err)
	}
}

func TestIndexStaysInItsDirectory(t *testing.T) {
	c := sampleCheckpoint(t, 51)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.apsim")
	arts := mustSave(t, SinkConfig{Path: path, Shard: "300B"}, c)
	idx := arts[len(arts)-1].Path
	orig, _ := os.ReadFile(idx)
	first := filepath.Base(arts[0].Path)

	outside := t.TempDir()
	moved := filepath.Join(outside, first)
	data, _ := os.ReadFile(arts[0].Path)
	os.WriteFile(moved, data, 0o644)
	for _, name := range []string{"../" + filepath.Base(outside) + "/" + first, moved, "sub/" + first, "..", ".", "a\\b.apsim", ""} {
		os.WriteFile(idx, []byte(strings.ReplaceAll(string(orig), `"`+first+`"`, jsonString(name))), 0o644)
		_, err := loadAll(t, SourceConfig{Path: idx})
		if err == nil || !plugin.IsBadInput(err) {
			t.Errorf("shard name %q: %v", name, err)
		}
	}
	os.WriteFile(idx, orig, 0o644)

	// A symbolic link out of the directory is refused; one inside it is fine.
	os.Rename(arts[0].Path, arts[0].Path+".real")
	os.Symlink(moved, arts[0].Path)
	if _, err := loadAll(t, SourceConfig{Path: idx}); err == nil || !strings.Contains(err.Error(), "symbolic link out") {
		t.Errorf("symlink out: %v", err)
	}
	os.Remove(arts[0].Path)
	os.Symlink(filepath.Base(arts[0].Path)+".real", arts[0].Path)
	if _, err := loadAll(t, SourceConfig{Path: idx}); err != nil {
		t.Errorf("symlink within the directory: %v", err)
	}

	// Index keys are exact and unknown ones refused.
	for _, bad := range []string{
		strings.Replace(string(orig), `"weight_map"`, `"Weight_map"`, 1),
		strings.Replace(string(orig), `"metadata": {`, `"metadata": {"extra": 1,`, 1),
		strings.Replace(string(orig), `"format": "apsi-model"`, `"format": "other"`, 1),
		string(orig) + "{}",
		"[]",
	} {
		os.WriteFile(idx, []byte(bad), 0o644)
		if _, err := loadAll(t, SourceConfig{Path: idx}); err == nil || !plugin.IsBadInput(err) {
			t.Errorf("malformed index accepted: %v\n%.200s", err, bad)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
