package npz

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/plugintest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestMain(m *testing.M) {
	plugintest.ServeIfChild(Plugin())
	os.Exit(m.Run())
}

var numpyDTypes = []tensor.DType{
	tensor.F64, tensor.F32, tensor.F16, tensor.I64, tensor.I32, tensor.I16, tensor.I8,
	tensor.U64, tensor.U32, tensor.U16, tensor.U8, tensor.Bool,
}

// The conformance kit: round trips in-process and over go-plugin, header-only
// reads, damaged archives.
func TestConformance(t *testing.T) {
	plugintest.Run(t, plugintest.Suite{
		Plugin: Plugin(), Source: "npz", Sink: "npz", File: "model.npz", DTypes: numpyDTypes, Digests: true,
		Header: func(r io.ReaderAt, size int64) error {
			zr, err := zip.NewReader(r, size)
			if err != nil {
				return err
			}
			for _, zf := range zr.File {
				off, err := zf.DataOffset()
				if err != nil {
					return err
				}
				if _, err := readHeader(io.NewSectionReader(r, off, int64(zf.UncompressedSize64)), int64(zf.UncompressedSize64), "x", zf.Name); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// writeArchive writes tensors through the sink, in reverse order to show
// that order does not matter.
func writeArchive(t *testing.T, s *Sink, m *tensor.Manifest, data map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	p, err := s.Plan(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Convert) > 0 {
		t.Fatalf("unexpected conversion of %s", p.Convert[0].Tensor)
	}
	if err := s.Begin(ctx, m, plugin.BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := len(m.Tensors) - 1; i >= 0; i-- {
		n := m.Tensors[i].Name
		if err := s.Write(ctx, n, plugin.BytesData(data[n])); err != nil {
			t.Fatal(err)
		}
	}
	arts, err := s.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.cfg.Path); err != nil || uint64(fi.Size()) != arts[0].Size || arts[0].Size != p.Files[0].Size {
		t.Fatalf("archive size: file %v (%v), reported %d, planned %d", fi.Size(), err, arts[0].Size, p.Files[0].Size)
	}
}

func sampleTensors() (*tensor.Manifest, map[string][]byte) {
	m := &tensor.Manifest{}
	data := map[string][]byte{}
	for i, spec := range []struct {
		name  string
		dtype tensor.DType
		shape []uint64
	}{
		{"embed/weight", tensor.F32, []uint64{3, 4}},
		{"bias", tensor.F16, []uint64{5}},
		{"scalar", tensor.I64, []uint64{}},
		{"mask", tensor.Bool, []uint64{2, 2, 2}},
		{"ünïcode", tensor.U8, []uint64{7}},
	} {
		size, _ := spec.dtype.ShapeByteSize(spec.shape)
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		if spec.dtype == tensor.Bool {
			for j := range b {
				b[j] &= 1
			}
		}
		m.Tensors = append(m.Tensors, tensor.TensorInfo{Name: spec.name, DType: spec.dtype, Shape: spec.shape, Size: size})
		data[spec.name] = b
	}
	return m, data
}

// ZIP64 records, forced on a small archive, are read back by Go's reader and
// by the source.
func TestZip64RoundTrip(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("zip64=%v", force), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.npz")
			s, _ := NewSink(&SinkConfig{Path: path})
			s.force64 = force
			m, data := sampleTensors()
			writeArchive(t, s, m, data)
			zr, err := zip.OpenReader(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, zf := range zr.File {
				rc, err := zf.Open()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					t.Errorf("%s: %v (CRC-32 or sizes wrong)", zf.Name, err)
				}
				rc.Close()
			}
			zr.Close()
			checkRead(t, path, m, data)
		})
	}
}

func checkRead(t *testing.T, path string, m *tensor.Manifest, data map[string][]byte) {
	t.Helper()
	src, err := OpenSource(&SourceConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got, err := src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tensors) != len(m.Tensors) {
		t.Fatalf("%d tensors read, %d written", len(got.Tensors), len(m.Tensors))
	}
	for i, w := range m.Tensors {
		g := got.Tensors[i]
		if g.Name != w.Name || g.DType != w.DType || fmt.Sprint(g.Shape) != fmt.Sprint(w.Shape) {
			t.Errorf("tensor %d: read %s %s %v, wrote %s %s %v", i, g.Name, g.DType, g.Shape, w.Name, w.DType, w.Shape)
			continue
		}
		rc, err := src.Open(context.Background(), g.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(b, data[g.Name]) {
			t.Errorf("%s: bytes differ (%v)", g.Name, err)
		}
	}
}

func TestSinkConvertsWhatNumPyLacks(t *testing.T) {
	s, _ := NewSink(&SinkConfig{Path: filepath.Join(t.TempDir(), "x.npz")})
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "w", DType: tensor.BF16, Shape: []uint64{2, 32}, Size: 128},
		{Name: "q", DType: tensor.Q8_0, Shape: []uint64{1, 32}, Size: 34},
		{Name: "f", DType: tensor.F32, Shape: []uint64{2}, Size: 8},
	}}
	m.Metadata.Set("general.name", tensor.StringValue("x"))
	p, err := s.Plan(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Convert) != 2 || p.Convert[0].To != tensor.F32 || p.Convert[1].To != tensor.F32 {
		t.Errorf("conversions: %+v", p.Convert)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0].Msg, "1 keys") {
		t.Errorf("notes: %+v", p.Notes)
	}
}

func TestHeaderErrors(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   string
	}{
		{"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", "big-endian"},
		{"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", "not supported"},
		{"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", "Fortran"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'x'), }", "dimension"},
		{"{'descr': '<f4', 'fortran_order': False}", "'shape'"},
		{"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (), }", "twice"},
		{"['descr']", "expected '{'"},
	} {
		if _, err := parseHeaderText(tc.header); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error about %q", tc.header, err, tc.want)
		}
	}
	// A header whose array does not fill its entry.
	hdr, _ := formatHeader(tensor.F32, []uint64{4})
	_, err := readHeader(bytes.NewReader(append(hdr, make([]byte, 12)...)), int64(len(hdr)+12), "a.npz", "x")
	var fe *binio.FormatError
	if err == nil || !strings.Contains(err.Error(), "16 bytes") || !errors.As(err, &fe) || fe.Offset != int64(len(hdr)) {
		t.Errorf("short array: %v", err)
	}
}

// The header is NumPy's, byte for byte: np.lib.format.write_array of a
// float32 (3, 4) array starts with these 128 bytes.
func TestFormatHeaderMatchesNumPy(t *testing.T) {
	h, err := formatHeader(tensor.F32, []uint64{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	want := "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028332c2034292c207d" +
		strings.Repeat("20", 128-10-59-1) + "0a"
	if hex.EncodeToString(h) != want {
		t.Errorf("header:\n got %x\nwant %s", h, want)
	}
}

// numpyPython returns a python3 on PATH that can import numpy (there may be
// several, e.g. a pyenv shim before the system's), or skips the test.
func numpyPython(t *testing.T) string {
	t.Helper()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		py := filepath.Join(dir, "python3")
		if fi, err := os.Stat(py); err != nil || fi.IsDir() {
			continue
		}
		if exec.Command(py, "-c", "import numpy").Run() == nil {
			return py
		}
	}
	t.Skip("no python3 with numpy on PATH")
	return ""
}

// python runs a NumPy script when a Python with NumPy is installed.
func python(t *testing.T, script string, args ...string) string {
	t.Helper()
	py := numpyPython(t)
	out, err := exec.Command(py, append([]string{"-c", script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return string(out)
}

// numpy.load reads what the sink writes (also with ZIP64 records), and the
// source reads what numpy.savez and numpy.savez_compressed write.
func TestNumPyInterop(t *testing.T) {
	dir := t.TempDir()
	m, data := sampleTensors()
	for _, force := range []bool{false, true} {
		path := filepath.Join(dir, fmt.Sprintf("sluice-%v.npz", force))
		s, _ := NewSink(&SinkConfig{Path: path})
		s.force64 = force
		writeArchive(t, s, m, data)
		out := python(t, `
import sys, numpy as np
z = np.load(sys.argv[1])
for k in z.files:
    a = z[k]
    print(k, a.dtype.str, a.shape, a.tobytes().hex())
`, path)
		for _, want := range m.Tensors {
			line := fmt.Sprintf("%s %s %v %x", want.Name, mustDescr(want.DType), pyShape(want.Shape), data[want.Name])
			if !strings.Contains(out, line) {
				t.Errorf("numpy.load of %s lacks %q:\n%s", filepath.Base(path), line, out)
			}
		}
	}
	for _, fn := range []string{"savez", "savez_compressed"} {
		path := filepath.Join(dir, fn+".npz")
		python(t, `
import sys, numpy as np
getattr(np, sys.argv[2])(sys.argv[1], w=np.arange(12, dtype='<f4').reshape(3, 4), b=np.array([True, False]), s=np.int16(-3))
`, path, fn)
		w := make([]byte, 0, 48)
		for i := 0; i < 12; i++ {
			w = append(w, f32bytes(float32(i))...)
		}
		want := &tensor.Manifest{Tensors: []tensor.TensorInfo{
			{Name: "w", DType: tensor.F32, Shape: []uint64{3, 4}},
			{Name: "b", DType: tensor.Bool, Shape: []uint64{2}},
			{Name: "s", DType: tensor.I16, Shape: []uint64{}},
		}}
		checkRead(t, path, want, map[string][]byte{"w": w, "b": {1, 0}, "s": {0xfd, 0xff}})
	}
}

func mustDescr(d tensor.DType) string { s, _ := descrOf(d); return s }

func pyShape(s []uint64) string {
	switch len(s) {
	case 0:
		return "()"
	case 1:
		return fmt.Sprintf("(%d,)", s[0])
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func f32bytes(f float32) []byte {
	var b [4]byte
	u := math.Float32bits(f)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	return b[:]
}

// FuzzReadHeader checks that no header makes the parser panic or accept an
// array that does not fill its entry.
func FuzzReadHeader(f *testing.F) {
	for _, shape := range [][]uint64{{3, 4}, {5}, {}} {
		h, _ := formatHeader(tensor.F32, shape)
		size, _ := tensor.F32.ShapeByteSize(shape)
		f.Add(append(h, make([]byte, size)...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := readHeader(bytes.NewReader(b), int64(len(b)), "fuzz.npz", "x")
		if err != nil {
			return
		}
		if uint64(h.dataOffset)+h.size != uint64(len(b)) {
			t.Fatalf("accepted a %d-byte array at %d in %d bytes", h.size, h.dataOffset, len(b))
		}
	})
}
