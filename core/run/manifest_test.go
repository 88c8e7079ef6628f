package run

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestManifestRoundTripAndChecks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.gguf"+ManifestSuffix)
	m := &Manifest{Format: ManifestFormat, Version: ManifestVersion, Stage: "sink.x", Started: time.Unix(1, 0).UTC(), Finished: time.Unix(2, 0).UTC(),
		Pipeline: PipelineRecord{Digest: "d", Variables: map[string]json.RawMessage{"a": json.RawMessage(`"b"`)}},
		Outputs:  []FileRecord{{Path: "model.gguf", Size: 3, SHA256: "s"}}}
	if err := WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(path)
	if err != nil || got.Stage != "sink.x" || got.Outputs[0].Path != "model.gguf" || !got.Finished.Equal(m.Finished) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"format": "other", "version": 1}`, "format"},
		{`{"format": "sluice-run-manifest", "version": 9}`, "version 9"},
		{`[1, 2]`, "not a run manifest"},
	} {
		os.WriteFile(path, []byte(tc.body), 0o644)
		_, err := ReadManifest(path)
		var me *ManifestError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) || !me.BadInput() {
			t.Errorf("%s: %v", tc.body, err)
		}
	}
	if p := PartitionManifestPath(path, Partition{Index: 2, Count: 5}); filepath.Base(p) != "model.gguf.partition-2-of-5"+ManifestSuffix {
		t.Errorf("partition manifest path %s", p)
	}
}

func TestSensitiveFingerprint(t *testing.T) {
	pv := &Provenance{sensitive: []byte("key\x00\"one\"\x00")}
	fp := fingerprint([]byte("0123456789abcdef"), pv.sensitive)
	if !pv.sensitiveMatches(fp) || strings.Contains(fp, "one") {
		t.Fatalf("fingerprint %s", fp)
	}
	other := &Provenance{sensitive: []byte("key\x00\"two\"\x00")}
	if other.sensitiveMatches(fp) || pv.sensitiveMatches("") || pv.sensitiveMatches("hmac-sha256:zz:00") {
		t.Error("a fingerprint matched other values")
	}
	if !(&Provenance{}).sensitiveMatches("") {
		t.Error("no sensitive values should match no fingerprint")
	}
	// Salts differ, fingerprints differ, both match.
	fp2 := fingerprint([]byte("fedcba9876543210"), pv.sensitive)
	if fp2 == fp || !pv.sensitiveMatches(fp2) {
		t.Error("salting")
	}
}

func TestCompareVariablesAndPlugins(t *testing.T) {
	a := map[string]json.RawMessage{"n": json.RawMessage(`[1, 2]`), "s": json.RawMessage(`"x"`)}
	if r := compareVariables(a, map[string]json.RawMessage{"n": json.RawMessage(`[1,2]`), "s": json.RawMessage(`"x"`)}); r != "" {
		t.Errorf("equal JSON compared different: %s", r)
	}
	if r := compareVariables(a, map[string]json.RawMessage{"n": json.RawMessage(`[1,3]`), "s": json.RawMessage(`"x"`)}); !strings.Contains(r, "variable n") {
		t.Errorf("got %q", r)
	}
	if r := compareVariables(a, map[string]json.RawMessage{"s": json.RawMessage(`"x"`)}); !strings.Contains(r, "variable n") {
		t.Errorf("a removed variable: %q", r)
	}
	was := []PluginRecord{{Name: "gguf", Version: "1", Protocol: "1.1", SHA256: "a"}}
	for _, tc := range []struct {
		now  []PluginRecord
		want string
	}{
		{[]PluginRecord{{Name: "gguf", Version: "1", Protocol: "1.1", SHA256: "a"}}, ""},
		{[]PluginRecord{{Name: "gguf", Version: "2", Protocol: "1.1", SHA256: "a"}}, "version 2"},
		{[]PluginRecord{{Name: "gguf", Version: "1", Protocol: "1.1", SHA256: "b"}}, "binary of plugin gguf changed"},
		{nil, "no longer used"},
		{[]PluginRecord{was[0], {Name: "npz"}}, "npz was not used"},
	} {
		if r := comparePlugins(was, tc.now); (tc.want == "" && r != "") || !strings.Contains(r, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.now, r, tc.want)
		}
	}
}
