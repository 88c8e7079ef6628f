package gguf

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

func TestSourceLocationsAndOnly(t *testing.T) {
	ref := refDir(t)
	path := filepath.Join(ref, "sample.gguf")
	src, err := NewSource(&SourceConfig{Path: path, Only: []string{"q*_mat", "f32_vec"}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m, err := src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range m.Tensors {
		names = append(names, ti.Name)
	}
	if got := strings.Join(names, ","); got != "f32_vec,q8_0_mat,q4_0_mat,q4_K_mat,q6_K_mat" {
		t.Errorf("only kept %s", got)
	}
	whole, _ := os.ReadFile(path)
	for _, ti := range m.Tensors {
		loc := ti.Location
		if loc == nil || !filepath.IsAbs(loc.Path) || loc.Length != ti.Size {
			t.Fatalf("%s: location %+v", ti.Name, loc)
		}
		rc, err := src.Open(context.Background(), ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		if !bytes.Equal(b, whole[loc.Offset:loc.Offset+loc.Length]) {
			t.Errorf("%s: Open and Location disagree", ti.Name)
		}
	}
	if _, err := src.Open(context.Background(), "f16_mat"); !plugin.IsBadInput(err) {
		t.Errorf("Open of a tensor left out: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}

	src2, _ := NewSource(&SourceConfig{Path: path, Only: []string{"nope*"}})
	defer src2.Close()
	if _, err := src2.Describe(context.Background()); !plugin.IsBadConfig(err) || !strings.Contains(err.Error(), "nope*") {
		t.Errorf("unmatched pattern: %v", err)
	}
	if _, err := NewSource(&SourceConfig{Path: path, Only: []string{"[x"}}); !plugin.IsBadConfig(err) {
		t.Errorf("bad pattern: %v", err)
	}
	src3, _ := NewSource(&SourceConfig{Path: filepath.Join(t.TempDir(), "absent.gguf")})
	if _, err := src3.Describe(context.Background()); !plugin.IsBadInput(err) {
		t.Errorf("absent file: %v", err)
	}
}

func TestProbe(t *testing.T) {
	ref := refDir(t)
	if p := Probe(filepath.Join(ref, "sample.gguf")); p != 100 {
		t.Errorf("Probe(sample.gguf) = %d", p)
	}
	if p := Probe(filepath.Join(ref, "badmagic.gguf")); p != 0 {
		t.Errorf("Probe(badmagic.gguf) = %d", p)
	}
	if p := Probe(filepath.Join(ref, "missing")); p != 0 {
		t.Errorf("Probe(missing) = %d", p)
	}
	if err := Plugin().Validate(); err != nil {
		t.Error(err)
	}
}
