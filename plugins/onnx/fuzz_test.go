package onnx

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzModel feeds arbitrary bytes to the ONNX reader: parsing, Describe and
// Open may fail, never panic, and every tensor read has its declared size.
func FuzzModel(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := parseModel(bytes.NewReader(data), int64(len(data)), "fuzz"); err != nil {
			return
		}
		p := filepath.Join(t.TempDir(), "m.onnx")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		Probe(p)
		s, err := NewSource(Config{Path: p})
		if err != nil {
			return
		}
		defer s.Close()
		m, err := s.Describe(context.Background())
		if err != nil {
			return
		}
		for _, ti := range m.Tensors {
			if ti.Size > 1<<20 {
				continue
			}
			rc, err := s.Open(context.Background(), ti.Name)
			if err != nil {
				continue
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err == nil && uint64(len(b)) != ti.Size {
				t.Fatalf("%s: %d bytes, size %d", ti.Name, len(b), ti.Size)
			}
		}
	})
}
