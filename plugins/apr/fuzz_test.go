package apr

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// fuzzSeeds are small files of every layout and compression: the golden
// model, a model with a tokenizer, and one with every dtype.
func fuzzSeeds(t testing.TB) map[string][]byte {
	small := everyDType(20)
	small.m.Tensors = small.m.Tensors[:len(small.m.Tensors)-1] // without the large tensor
	delete(small.data, "j.big")
	tok := &model{m: *ggufManifest(), data: map[string][]byte{"token_embd.weight": make([]byte, 192), "output_norm.weight": make([]byte, 32)}}
	seeds := map[string][]byte{}
	for _, opts := range allLayouts {
		for name, mo := range map[string]*model{"golden": goldenModel(), "dtypes": small, "tokenizer": tok} {
			seeds[name+"-"+optsName(opts)] = writeBytes(t, opts, mo)
		}
	}
	return seeds
}

// FuzzReader feeds arbitrary bytes to both readers, verifying or not, and
// reads every tensor: any input gives data or an error, never a panic or
// an allocation the input does not justify.
func FuzzReader(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	defer func(orig func(string) (spoolFile, error)) { newSpool = orig }(newSpool)
	newSpool = func(string) (spoolFile, error) { return &memSpool{}, nil }
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, noVerify := range []bool{false, true} {
			opts := ReadOptions{NoVerify: noVerify, Name: "fuzz.apr"}
			if r, err := NewReader(bytes.NewReader(b), int64(len(b)), opts); err == nil {
				for i := range r.Tensors {
					rc, err := r.Open(&r.Tensors[i])
					if err != nil {
						continue
					}
					n, err := io.Copy(io.Discard, rc)
					rc.Close()
					if err == nil && uint64(n) != r.Tensors[i].RawSize {
						t.Fatalf("tensor %q: %d bytes read, %d declared", r.Tensors[i].Name, n, r.Tensors[i].RawSize)
					}
				}
				r.Close()
			}
			if sr, err := NewStreamReader(bytes.NewReader(b), opts); err == nil {
				for {
					tt, data, err := sr.Next()
					if err != nil {
						break
					}
					n, err := io.Copy(io.Discard, data)
					if err == nil && uint64(n) != tt.RawSize {
						t.Fatalf("stream tensor %q: %d bytes read, %d declared", tt.Name, n, tt.RawSize)
					}
				}
				sr.Close()
			}
		}
	})
}

// TestFuzzCorpus keeps testdata/fuzz/FuzzReader in step with the writer
// (rewritten with -update) and checks every committed seed reads cleanly.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	if *update {
		os.MkdirAll(dir, 0o755)
		for name, b := range fuzzSeeds(t) {
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) < len(allLayouts) {
		t.Fatalf("seed corpus: %d files (%v); run with -update", len(entries), err)
	}
	_ = tensor.F32
}

// memSpool keeps a decompressed copy in memory, for fuzzing speed.
type memSpool struct{ b []byte }

func (m *memSpool) Write(p []byte) (int, error) { m.b = append(m.b, p...); return len(p), nil }
func (m *memSpool) Close() error                { return nil }
func (m *memSpool) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(m.b).ReadAt(p, off)
}
