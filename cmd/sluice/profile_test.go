package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestCPUProfile: --cpuprofile writes a profile pprof parses, whatever the
// command, and a profile that cannot be created is a configuration error.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	out := filepath.Join(dir, "out.gguf")
	if _, stderr, code := sluice(t, "convert", sampleDir(t), out, "--dtype", "q8_0", "--in-process", "--quiet", "--cpuprofile", prof); code != 0 {
		t.Fatalf("convert --cpuprofile: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is a gzip-compressed protocol buffer.
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the profile is not gzip data: %v", err)
	}
	if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
		t.Errorf("the profile holds %d bytes: %v", len(raw), err)
	}
	if _, stderr, code := sluice(t, "info", sampleDir(t), "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "cpu.prof")); code != exitBadConfig {
		t.Errorf("an uncreatable profile: exit %d, want %d\n%s", code, exitBadConfig, stderr)
	}
}
