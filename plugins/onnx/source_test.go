package onnx

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
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/plugintest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// expected is what make_fixtures.py recorded with onnx's own reader.
type expected struct {
	IRVersion       int64             `json:"ir_version"`
	ProducerName    string            `json:"producer_name"`
	ProducerVersion string            `json:"producer_version"`
	Domain          string            `json:"domain"`
	ModelVersion    int64             `json:"model_version"`
	DocString       string            `json:"doc_string"`
	GraphName       string            `json:"graph_name"`
	GraphDocString  string            `json:"graph_doc_string"`
	Opsets          map[string]int64  `json:"opsets"`
	MetadataProps   map[string]string `json:"metadata_props"`
	Initializers    []struct {
		Name     string   `json:"name"`
		DataType uint64   `json:"data_type"`
		Dims     []uint64 `json:"dims"`
		SHA256   string   `json:"sha256"`
	} `json:"initializers"`
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

func read(t *testing.T, s *Source, name string) ([]byte, error) {
	t.Helper()
	rc, err := s.Open(context.Background(), name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestFixturesMatchOnnx(t *testing.T) {
	for _, tc := range []struct{ path, expected string }{
		{"model.onnx", "model"},
		{"external/model.onnx", "external"},
	} {
		t.Run(tc.expected, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "expected", tc.expected+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var want expected
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			s := openSource(t, Config{Path: filepath.Join("testdata", tc.path)})
			m, err := s.Describe(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Tensors) != len(want.Initializers) {
				t.Fatalf("%d tensors, want %d", len(m.Tensors), len(want.Initializers))
			}
			refs := 0
			for i, w := range want.Initializers {
				ti := m.Tensors[i]
				if ti.Name != w.Name || ti.DType != dataTypes[w.DataType].dtype || !slices.Equal(ti.Shape, w.Dims) {
					t.Errorf("tensor %d: %s %s %v, want %s %s %v", i, ti.Name, ti.DType, ti.Shape, w.Name, dataTypes[w.DataType].dtype, w.Dims)
				}
				got, err := read(t, s, ti.Name)
				if err != nil {
					t.Fatalf("%s: %v", ti.Name, err)
				}
				if uint64(len(got)) != ti.Size || sum(got) != w.SHA256 {
					t.Errorf("%s: %d bytes with sha256 %s, want %d bytes with %s", ti.Name, len(got), sum(got), ti.Size, w.SHA256)
				}
				if ti.Location != nil {
					refs++
					f, err := os.Open(ti.Location.Path)
					if err != nil {
						t.Fatal(err)
					}
					b := make([]byte, ti.Location.Length)
					_, err = f.ReadAt(b, int64(ti.Location.Offset))
					f.Close()
					if err != nil || sum(b) != w.SHA256 {
						t.Errorf("%s: file reference does not hold the tensor: %v", ti.Name, err)
					}
				}
			}
			if refs != 4 { // the raw_data tensors, inline or external
				t.Errorf("%d file references, want 4", refs)
			}
			md := &m.Metadata
			if v, _ := md.Get("onnx.ir_version"); v.String() != "8" || int64(8) != want.IRVersion {
				t.Errorf("ir_version %v, want %d", v, want.IRVersion)
			}
			for key, w := range map[string]string{
				"onnx.producer_name": want.ProducerName, "onnx.producer_version": want.ProducerVersion,
				"onnx.domain": want.Domain, "onnx.doc_string": want.DocString,
				"onnx.graph.name": want.GraphName, "onnx.graph.doc_string": want.GraphDocString,
				"onnx.metadata.author": want.MetadataProps["author"], "onnx.metadata.license": want.MetadataProps["license"],
			} {
				if got := md.String(key); got != w {
					t.Errorf("%s = %q, want %q", key, got, w)
				}
			}
			for d, v := range want.Opsets {
				if d == "" {
					d = "ai.onnx"
				}
				got, _ := md.Get("onnx.opset." + d)
				if i, _ := got.Int(); i != v {
					t.Errorf("opset %s = %v, want %d", d, got, v)
				}
			}
			if got, _ := md.Get("onnx.model_version"); got.String() != "3" || want.ModelVersion != 3 {
				t.Errorf("model_version %v", got)
			}
			if got, _ := md.Get("onnx.graph.nodes"); got.String() != "2" {
				t.Errorf("graph.nodes %v, want 2", got)
			}
			if m.Tensors[0].Attr("onnx.doc_string") != "the weight" {
				t.Errorf("tensor doc string lost: %v", m.Tensors[0].Attrs)
			}
		})
	}
}

// pb builds protobuf messages for hand-made models.
type pb []byte

func (b pb) varint(num protowire.Number, v uint64) pb {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func (b pb) bytes(num protowire.Number, v []byte) pb {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func (b pb) str(num protowire.Number, s string) pb { return b.bytes(num, []byte(s)) }

func kv(k, v string) []byte { return pb(nil).str(1, k).str(2, v) }

// modelWith wraps tensors (TensorProto bytes) into a model file in dir.
func modelWith(t *testing.T, dir string, tensors ...[]byte) string {
	t.Helper()
	var g pb
	g = g.str(graphName, "g")
	for _, tp := range tensors {
		g = g.bytes(graphInitializer, tp)
	}
	m := pb(nil).varint(modelIRVersion, 8).bytes(modelGraph, g)
	p := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(p, m, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func externalTensor(name, location string, length int) []byte {
	tp := pb(nil).varint(tensorDims, 2).varint(tensorDataType, 1).str(tensorName, name)
	tp = tp.bytes(tensorExternalData, kv("location", location))
	if length >= 0 {
		tp = tp.bytes(tensorExternalData, kv("length", strconv.Itoa(length)))
	}
	return tp.varint(tensorDataLocation, 1)
}

func TestExternalDataStaysInsideTheModelDirectory(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside.bin")
	os.WriteFile(outside, make([]byte, 8), 0o644)
	dir := filepath.Join(root, "model")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "w.bin"), []byte{0, 0, 128, 63, 0, 0, 0, 64}, 0o644)
	os.Symlink(outside, filepath.Join(dir, "link.bin"))
	os.Symlink(root, filepath.Join(dir, "linkdir"))
	os.Symlink(filepath.Join(dir, "sub", "w.bin"), filepath.Join(dir, "inner.bin"))

	for location, want := range map[string]string{
		"../outside.bin":           "leaves the model's directory",
		"sub/../../outside.bin":    "leaves the model's directory",
		outside:                    "is absolute",
		"link.bin":                 "outside the model's directory",
		"linkdir/outside.bin":      "outside the model's directory",
		"sub\\..\\..\\outside.bin": "backslash",
		"":                         "no location",
		"sub/w.bin":                "",
		"inner.bin":                "",
	} {
		t.Run(location, func(t *testing.T) {
			p := modelWith(t, dir, externalTensor("w", location, 8))
			s := openSource(t, Config{Path: p})
			m, err := s.Describe(context.Background())
			if want == "" {
				if err != nil {
					t.Fatal(err)
				}
				got, err := read(t, s, "w")
				if err != nil || !slices.Equal(got, []byte{0, 0, 128, 63, 0, 0, 0, 64}) || m.Tensors[0].Location == nil {
					t.Fatalf("read %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `tensor "w"`) {
				t.Fatalf("got %v, want an error containing %q naming the tensor", err, want)
			}
		})
	}
}

func TestMalformedModelsNameTheProblem(t *testing.T) {
	f32 := func(name string) pb {
		return pb(nil).varint(tensorDims, 2).varint(tensorDataType, 1).str(tensorName, name)
	}
	packed := func(vals ...uint64) []byte {
		var b []byte
		for _, v := range vals {
			b = protowire.AppendVarint(b, v)
		}
		return b
	}
	i8 := pb(nil).varint(tensorDims, 2).varint(tensorDataType, 3).str(tensorName, "i8")
	cases := map[string]struct {
		tensor   []byte
		want     string
		describe bool // the error comes from Describe, else from reading
	}{
		"raw too short":     {f32("a").bytes(tensorRawData, make([]byte, 4)), "raw_data holds 4 bytes", true},
		"typed too few":     {f32("a").bytes(tensorFloatData, make([]byte, 4)), "holds 1 values", true},
		"wrong typed field": {f32("a").bytes(tensorInt64Data, packed(1, 2)), "holds int64_data", true},
		"raw and typed":     {f32("a").bytes(tensorRawData, make([]byte, 8)).bytes(tensorFloatData, make([]byte, 8)), "both raw_data", true},
		"no data":           {f32("a"), "has no data", true},
		"complex":           {pb(nil).varint(tensorDims, 1).varint(tensorDataType, 14).str(tensorName, "c"), "COMPLEX64", true},
		"string tensor":     {pb(nil).varint(tensorDims, 1).varint(tensorDataType, 8).str(tensorName, "s").bytes(tensorStringData, []byte("x")), "STRING", true},
		"negative dim":      {pb(nil).varint(tensorDims, uint64(1<<64-1)).varint(tensorDataType, 1).str(tensorName, "n"), "dimension 0 is -1", true},
		"ragged packed":     {f32("a").bytes(tensorFloatData, make([]byte, 7)), "not a whole number", true},
		"varint cut":        {i8.bytes(tensorInt32Data, []byte{0x80}), "ends inside a varint", true},
		"int8 out of range": {i8.bytes(tensorInt32Data, packed(1, 300)), "element 1 is 300", false},
		"external length":   {externalTensor("e", "model.onnx", 4), "holds 4 bytes at offset 0, the tensor needs 8", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := modelWith(t, t.TempDir(), tc.tensor)
			s := openSource(t, Config{Path: p})
			m, err := s.Describe(context.Background())
			if !tc.describe {
				if err != nil {
					t.Fatal(err)
				}
				_, err = read(t, s, m.Tensors[0].Name)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !plugin.IsBadInput(err) {
				t.Fatalf("got %v, want a bad-input error containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "tensor ") || !strings.Contains(err.Error(), p) {
				t.Errorf("error does not name the file and tensor: %v", err)
			}
		})
	}
}

func TestTruncatedModelGivesOffset(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cut.onnx")
	os.WriteFile(p, b[:len(b)/2], 0o644)
	s := openSource(t, Config{Path: p})
	_, err = s.Describe(context.Background())
	var fe *binio.FormatError
	if !errors.As(err, &fe) || fe.Offset < 0 || fe.File != p {
		t.Fatalf("got %v, want a FormatError with an offset", err)
	}
}

func TestUnpackedTypedFields(t *testing.T) {
	// proto2-style repeated fields: one tag per element, interleaved with
	// other fields.
	tp := pb(nil).varint(tensorDataType, 7).str(tensorName, "i64")
	tp = tp.varint(tensorDims, 3).varint(tensorInt64Data, 5).varint(tensorInt64Data, uint64(1<<64-2))
	tp = tp.str(tensorDocString, "x").varint(tensorInt64Data, 9)
	s := openSource(t, Config{Path: modelWith(t, t.TempDir(), tp)})
	if _, err := s.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := read(t, s, "i64")
	want := []byte{5, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 9, 0, 0, 0, 0, 0, 0, 0}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("PK\x03\x04 not onnx"), 0o644)
	bare := filepath.Join(dir, "bare.onnx")
	os.WriteFile(bare, pb(nil).varint(modelIRVersion, 7).str(modelProducerName, "x"), 0o644)
	for p, want := range map[string]int{
		"testdata/model.onnx":            95,
		"testdata/external/model.onnx":   95,
		"testdata/external/weights.data": 0,
		bare:                             60,
		junk:                             0,
		"testdata/expected/model.json":   0,
	} {
		if got := Probe(p); got != want {
			t.Errorf("Probe(%s) = %d, want %d", p, got, want)
		}
	}
}

func TestOnlyAndPlugin(t *testing.T) {
	p := Plugin()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	st, _ := p.Source("onnx")
	src, err := st.Open(context.Background(), plugin.MustConfig(map[string]any{"path": "testdata/model.onnx", "only": []string{"*_raw"}}))
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
	if want := []string{"w_f32_raw", "f64_raw", "f16_raw", "i64_raw"}; !slices.Equal(names, want) {
		t.Errorf("only kept %v, want %v", names, want)
	}
	if _, err := NewSource(Config{Path: "testdata/model.onnx", Only: []string{"["}}); !plugin.IsBadConfig(err) {
		t.Errorf("bad glob: %v", err)
	}
	var _ tensor.DType
}

// TestDescribeReadsOnlyStructure measures, by the process's read counter,
// that describing a model with 64 MiB of raw_data reads a few KiB.
func TestDescribeReadsOnlyStructure(t *testing.T) {
	raw := make([]byte, 64<<20)
	tp := pb(nil).varint(tensorDims, uint64(len(raw))).varint(tensorDataType, 2).str(tensorName, "big").bytes(tensorRawData, raw)
	p := modelWith(t, t.TempDir(), tp)
	before := plugintest.ReadChars(t)
	s := openSource(t, Config{Path: p})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if read := plugintest.ReadChars(t) - before; read > 256<<10 {
		t.Errorf("Describe of a %d-byte model read %d bytes", len(raw), read)
	}
	if m.Tensors[0].Location == nil || m.Tensors[0].Location.Length != uint64(len(raw)) {
		t.Errorf("no file reference for raw_data: %+v", m.Tensors[0])
	}
}
