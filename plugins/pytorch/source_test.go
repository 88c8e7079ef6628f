package pytorch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// expected is what make_fixtures.py recorded from torch and the Hugging Face
// conversion rules.
type expected struct {
	Tensors []struct {
		Name   string   `json:"name"`
		DType  string   `json:"dtype"`
		Shape  []uint64 `json:"shape"`
		SHA256 string   `json:"sha256"`
		TiedTo string   `json:"tied_to"`
	} `json:"tensors"`
	DiscardNames []string `json:"discard_names"`
}

func loadExpected(t *testing.T, name string) expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "expected", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func openSource(t *testing.T, cfg Config) *Source {
	t.Helper()
	s, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readTensor(t *testing.T, s *Source, ti tensor.TensorInfo) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), ti.Name)
	if err != nil {
		t.Fatalf("Open %s: %v", ti.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", ti.Name, err)
	}
	return b
}

// readLocation reads a tensor's bytes through its file reference, as the
// core does.
func readLocation(t *testing.T, ref *tensor.FileRef) []byte {
	t.Helper()
	f, err := os.Open(ref.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, ref.Length)
	if _, err := f.ReadAt(b, int64(ref.Offset)); err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// checkAgainst compares a source's manifest and bytes with what torch and
// the Hugging Face rules produced.
func checkAgainst(t *testing.T, cfg Config, fixture string) *tensor.Manifest {
	t.Helper()
	want := loadExpected(t, fixture)
	cfg.DiscardNames = want.DiscardNames
	s := openSource(t, cfg)
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != len(want.Tensors) {
		var got []string
		for _, ti := range m.Tensors {
			got = append(got, ti.Name)
		}
		t.Fatalf("%d tensors %v, want %d", len(m.Tensors), got, len(want.Tensors))
	}
	for i, w := range want.Tensors {
		ti := m.Tensors[i]
		if ti.Name != w.Name {
			t.Fatalf("tensor %d is %q, want %q", i, ti.Name, w.Name)
		}
		info, _ := ti.DType.Info()
		if info.Safetensors != w.DType {
			t.Errorf("%s: dtype %s, want %s", w.Name, info.Safetensors, w.DType)
		}
		if !slices.Equal(ti.Shape, w.Shape) {
			t.Errorf("%s: shape %v, want %v", w.Name, ti.Shape, w.Shape)
		}
		if got := ti.Attr(tensor.AttrTiedTo); got != w.TiedTo {
			t.Errorf("%s: tied to %q, want %q", w.Name, got, w.TiedTo)
		}
		b := readTensor(t, s, ti)
		if uint64(len(b)) != ti.Size {
			t.Errorf("%s: Open gave %d bytes, size says %d", w.Name, len(b), ti.Size)
		}
		if got := sum(b); got != w.SHA256 {
			t.Errorf("%s: bytes differ from torch's (sha256 %s, want %s)", w.Name, got, w.SHA256)
		}
		if ti.Location != nil {
			if got := sum(readLocation(t, ti.Location)); got != w.SHA256 {
				t.Errorf("%s: file reference bytes differ from torch's", w.Name)
			}
		}
	}
	return m
}

func TestFixturesMatchTorch(t *testing.T) {
	for _, tc := range []struct{ path, expected string }{
		{"dtypes.bin", "dtypes"},
		{"views.bin", "views"},
		{"tied.bin", "tied"},
		{"tied.bin", "tied_discard"},
		{"nested_model.pt", "nested_model"},
		{"lightning.ckpt", "lightning"},
		{"params.pth", "params"},
		{"hf_sharded", "hf_sharded"},
		{"hf_sharded/pytorch_model.bin.index.json", "hf_sharded"},
		{"hf_single", "hf_single"},
	} {
		t.Run(tc.expected+"/"+tc.path, func(t *testing.T) {
			checkAgainst(t, Config{Path: filepath.Join("testdata", tc.path)}, tc.expected)
		})
	}
}

func TestZeroCopyLocations(t *testing.T) {
	s := openSource(t, Config{Path: filepath.Join("testdata", "views.bin")})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Contiguous views of stored storages are file references; strided
	// views are gathered by Open.
	wantRef := map[string]bool{
		"base": true, "row1": true, "flat_tail": true,
		"cols": false, "transposed": false, "other_t": false, "alone_part": false, "expanded": false,
	}
	for _, ti := range m.Tensors {
		if got := ti.Location != nil; got != wantRef[ti.Name] {
			t.Errorf("%s: has file reference = %v, want %v", ti.Name, got, wantRef[ti.Name])
		}
		if ti.Location != nil {
			if !filepath.IsAbs(ti.Location.Path) || ti.Location.Length != ti.Size {
				t.Errorf("%s: bad file reference %+v", ti.Name, *ti.Location)
			}
		}
	}
}

func TestHFDirectoryCarriesSideFiles(t *testing.T) {
	s := openSource(t, Config{Path: filepath.Join("testdata", "hf_sharded")})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for file, key := range map[string]string{"config.json": tensor.MetaHFConfig, "tokenizer_config.json": tensor.MetaHFTokenizerConfig} {
		want, err := os.ReadFile(filepath.Join("testdata", "hf_sharded", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Metadata.String(key); got != string(want) {
			t.Errorf("%s: metadata %q = %q, want the file verbatim", file, key, got)
		}
	}
	if _, ok := m.Metadata.Get(tensor.MetaHFTokenizer); ok {
		t.Errorf("tokenizer.json is absent but its key is set")
	}
	// A lone file carries only the "format" mark Hugging Face's conversion writes.
	s2 := openSource(t, Config{Path: filepath.Join("testdata", "hf_single", "pytorch_model.bin")})
	m2, err := s2.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m2.Metadata.Len() != 1 || m2.Metadata.String("format") != "pt" {
		t.Errorf("a lone checkpoint file got metadata %v, want only format=pt", m2.Metadata.Keys())
	}
}

func TestOnlyFilter(t *testing.T) {
	s := openSource(t, Config{Path: filepath.Join("testdata", "hf_sharded"), Only: []string{"model.layers.*", "lm_head.*"}})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range m.Tensors {
		names = append(names, ti.Name)
	}
	want := []string{"model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.up_proj.weight", "lm_head.weight"}
	if !slices.Equal(names, want) {
		t.Errorf("tensors %v, want %v", names, want)
	}
	if _, err := NewSource(Config{Path: "testdata", Only: []string{"["}}); !plugin.IsBadConfig(err) {
		t.Errorf("a bad glob gave %v, want a config error", err)
	}
}

func TestStateDictKey(t *testing.T) {
	s := openSource(t, Config{Path: filepath.Join("testdata", "nested_model.pt"), StateDictKey: "optimizer"})
	_, err := s.Describe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no tensors") {
		t.Errorf("optimizer entry without tensors gave %v", err)
	}
	s = openSource(t, Config{Path: filepath.Join("testdata", "nested_model.pt"), StateDictKey: "missing"})
	_, err = s.Describe(context.Background())
	if err == nil || !strings.Contains(err.Error(), `no entry "missing"`) || !strings.Contains(err.Error(), "model") {
		t.Errorf("missing key gave %v", err)
	}
}

func TestRefusesOtherFormats(t *testing.T) {
	s := openSource(t, Config{Path: filepath.Join("testdata", "legacy.pt")})
	_, err := s.Describe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "before PyTorch 1.6") || !errors.Is(err, binio.ErrFormat) {
		t.Errorf("legacy format gave %v", err)
	}
	if _, err := NewSource(Config{Path: filepath.Join("testdata", "nope.bin")}); !plugin.IsBadInput(err) {
		t.Errorf("missing file gave %v", err)
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	both := filepath.Join(dir, "both")
	os.MkdirAll(both, 0o755)
	os.WriteFile(filepath.Join(both, "pytorch_model.bin"), mustRead(t, "testdata/tied.bin"), 0o644)
	os.WriteFile(filepath.Join(both, "model.safetensors"), []byte("x"), 0o644)
	junk := filepath.Join(dir, "junk.bin")
	os.WriteFile(junk, []byte("hello world, not a checkpoint"), 0o644)
	for path, want := range map[string]int{
		"testdata/dtypes.bin":                              100,
		"testdata/views.bin":                               100,
		"testdata/hf_sharded/pytorch_model.bin.index.json": 90,
		"testdata/hf_sharded":                              60,
		"testdata/legacy.pt":                               50,
		junk:                                               0,
		"testdata/expected/dtypes.json":                    0,
	} {
		if got := Probe(path); got != want {
			t.Errorf("Probe(%s) = %d, want %d", path, got, want)
		}
	}
}

func TestPluginValidates(t *testing.T) {
	p := Plugin()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	st, ok := p.Source("pytorch")
	if !ok {
		t.Fatal("no pytorch source")
	}
	src, err := st.Open(context.Background(), plugin.MustConfig(map[string]any{"path": "testdata/tied.bin"}))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m, err := src.Describe(context.Background())
	if err != nil || len(m.Tensors) != 4 {
		t.Fatalf("Describe through the component: %v, %v", m, err)
	}
	if _, err := st.Open(context.Background(), plugin.MustConfig(map[string]any{"path": "x", "typo": 1})); !plugin.IsBadConfig(err) {
		t.Errorf("unknown attribute gave %v", err)
	}
}

func TestConcurrentOpens(t *testing.T) {
	s := openSource(t, Config{Path: filepath.Join("testdata", "views.bin")})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, ti := range m.Tensors {
		want[ti.Name] = sum(readTensor(t, s, ti))
	}
	errs := make(chan error, 4*len(m.Tensors))
	for range 4 {
		for _, ti := range m.Tensors {
			go func() {
				rc, err := s.Open(context.Background(), ti.Name)
				if err == nil {
					var b []byte
					b, err = io.ReadAll(rc)
					rc.Close()
					if err == nil && sum(b) != want[ti.Name] {
						err = errors.New(ti.Name + ": bytes differ")
					}
				}
				errs <- err
			}()
		}
	}
	for range 4 * len(m.Tensors) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
