package pytorch

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/plugintest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestRebuildV3DTypes covers what newer torch writes for float8 and wide
// unsigned dtypes: _rebuild_tensor_v3 over an untyped storage, with the
// dtype as a global.
func TestRebuildV3DTypes(t *testing.T) {
	raw := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	p := newPickle().op('}')
	p.str("f8a").tensorV3("float8_e4m3fn", "0", 16, 0, []int64{2, 2}, []int64{2, 1}).op('s')
	p.str("f8b").tensorV3("float8_e5m2", "0", 16, 4, []int64{4}, []int64{1}).op('s')
	p.str("u16").tensorV3("uint16", "1", 16, 1, []int64{3}, []int64{2}).op('s')
	p.str("u32").tensorV3("uint32", "1", 16, 0, []int64{2, 2}, []int64{1, 2}).op('s')
	p.str("u64").tensorV3("uint64", "1", 16, 0, []int64{2}, []int64{1}).op('s', '.')
	path := writeZip(t, entry{name: "archive/data.pkl", data: p.Bytes()},
		entry{name: "archive/data/0", data: raw}, entry{name: "archive/data/1", data: raw})
	s := openSource(t, Config{Path: path})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		dtype tensor.DType
		shape []uint64
		data  []byte
		tied  string
	}{
		"f8a": {tensor.F8E4M3, []uint64{2, 2}, raw[:4], ""},
		"f8b": {tensor.F8E5M2, []uint64{4}, raw[4:8], ""},
		// u32 and u64 both cover storage 1 whole; the first name is kept.
		"u16": {tensor.U16, []uint64{3}, []byte{2, 3, 6, 7, 10, 11}, "u32"},
		"u32": {tensor.U32, []uint64{2, 2}, []byte{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15}, ""},
		"u64": {tensor.U64, []uint64{2}, raw, "u32"},
	}
	for _, ti := range m.Tensors {
		w := want[ti.Name]
		if ti.DType != w.dtype || !slices.Equal(ti.Shape, w.shape) || ti.Attr(tensor.AttrTiedTo) != w.tied {
			t.Errorf("%s: %s %v tied %q, want %s %v tied %q", ti.Name, ti.DType, ti.Shape, ti.Attr(tensor.AttrTiedTo), w.dtype, w.shape, w.tied)
		}
		if got := readTensor(t, s, ti); !bytes.Equal(got, w.data) {
			t.Errorf("%s: bytes %v, want %v", ti.Name, got, w.data)
		}
	}
}

// storagesPickle is a state dict of a 2×3 f32 tensor, its transpose and
// its second row, all over storage "0".
func storagesPickle() []byte {
	p := newPickle().op('}')
	p.str("m").tensorV2("FloatStorage", "0", 6, 0, []int64{2, 3}, []int64{3, 1}).op('s')
	p.str("mt").tensorV2("FloatStorage", "0", 6, 0, []int64{3, 2}, []int64{1, 3}).op('s')
	p.str("row").tensorV2("FloatStorage", "0", 6, 3, []int64{3}, []int64{1}).op('s', '.')
	return p.Bytes()
}

var storagesWant = map[string][]uint32{
	"m":   {1, 2, 3, 4, 5, 6},
	"mt":  {1, 4, 2, 5, 3, 6},
	"row": {4, 5, 6},
}

func TestBigEndianAndDeflatedStorages(t *testing.T) {
	be := make([]byte, 24)
	for i := range 6 {
		binary.BigEndian.PutUint32(be[4*i:], uint32(i+1))
	}
	for name, entries := range map[string][]entry{
		"big-endian": {
			{name: "archive/data.pkl", data: storagesPickle()},
			{name: "archive/byteorder", data: []byte("big")},
			{name: "archive/data/0", data: be},
		},
		"deflated": {
			{name: "archive/data.pkl", data: storagesPickle(), method: zip.Deflate},
			{name: "archive/byteorder", data: []byte("little")},
			{name: "archive/data/0", data: le32(1, 2, 3, 4, 5, 6), method: zip.Deflate},
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := openSource(t, Config{Path: writeZip(t, entries...)})
			m, err := s.Describe(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, ti := range m.Tensors {
				if ti.Location != nil {
					t.Errorf("%s: a file reference to bytes that need decoding", ti.Name)
				}
				if got := readTensor(t, s, ti); !bytes.Equal(got, le32(storagesWant[ti.Name]...)) {
					t.Errorf("%s: bytes %v, want %v", ti.Name, got, le32(storagesWant[ti.Name]...))
				}
			}
		})
	}
}

func TestCorruptCheckpointsNameTheProblem(t *testing.T) {
	good := storagesPickle()
	cases := map[string]struct {
		entries []entry
		want    []string
	}{
		"missing storage": {
			[]entry{{name: "archive/data.pkl", data: good}},
			[]string{`tensor "m"`, "no zip entry archive/data/0"},
		},
		"short storage": {
			[]entry{{name: "archive/data.pkl", data: good}, {name: "archive/data/0", data: le32(1, 2)}},
			[]string{`tensor "m"`, "holds 8 bytes", "has 24"},
		},
		"truncated pickle": {
			[]entry{{name: "archive/data.pkl", data: good[:40]}, {name: "archive/data/0", data: le32(1, 2, 3, 4, 5, 6)}},
			[]string{"archive/data.pkl", "pickle byte", "at byte"},
		},
		"bad byte order": {
			[]entry{{name: "archive/data.pkl", data: good}, {name: "archive/byteorder", data: []byte("middle")}},
			[]string{"archive/byteorder", "middle"},
		},
		"two pickles": {
			[]entry{{name: "a/data.pkl", data: good}, {name: "b/data.pkl", data: good}},
			[]string{"2 data.pkl entries"},
		},
		"torchscript": {
			[]entry{{name: "m/constants.pkl", data: good}, {name: "m/code/", data: nil}},
			[]string{"TorchScript"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeZip(t, tc.entries...)
			s := openSource(t, Config{Path: path})
			_, err := s.Describe(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			var fe *binio.FormatError
			if !errors.As(err, &fe) || fe.File != path {
				t.Errorf("not a FormatError naming the file: %#v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestDescribeReadsNoStorage checks laziness: storage bytes that are
// garbage (and would fail a CRC) do not disturb Describe.
func TestDescribeReadsNoStorage(t *testing.T) {
	path := writeZip(t, entry{name: "archive/data.pkl", data: storagesPickle()},
		entry{name: "archive/data/0", data: le32(1, 2, 3, 4, 5, 6), method: zip.Deflate})
	// Corrupt the deflated storage stream in place.
	b := mustRead(t, path)
	i := bytes.Index(b, []byte("archive/data/0")) + len("archive/data/0")
	for j := i; j < i+8; j++ {
		b[j] ^= 0xff
	}
	mustWrite(t, path, b)
	s := openSource(t, Config{Path: path})
	if _, err := s.Describe(context.Background()); err != nil {
		t.Fatalf("Describe read a storage: %v", err)
	}
	if _, err := s.Open(context.Background(), "m"); err == nil {
		rc, _ := s.Open(context.Background(), "m")
		if _, err := readAll(rc); err == nil {
			t.Errorf("reading a corrupt storage succeeded")
		}
	}
}

// TestTorch2Wrappers covers the wrappers torch 2 writes around tensors
// that carry Python attributes.
func TestTorch2Wrappers(t *testing.T) {
	p := newPickle().op('}')
	// "p": _rebuild_parameter_with_state(tensor, False, OrderedDict(), {"tag": 1})
	p.str("p").global("torch._utils", "_rebuild_parameter_with_state").op('(')
	p.tensorV2("FloatStorage", "0", 6, 0, []int64{2, 3}, []int64{3, 1})
	p.op(0x89).global("collections", "OrderedDict").op(')', 'R').op('}').str("tag").int(1).op('s', 't', 'R', 's')
	// "t": _rebuild_from_type_v2(_rebuild_tensor_v2, torch.Tensor, args, {"note": "x"})
	p.str("t").global("torch._tensor", "_rebuild_from_type_v2").op('(')
	p.global("torch._utils", "_rebuild_tensor_v2").global("torch", "Tensor").op('(')
	p.op('(').str("storage").global("torch", "FloatStorage").str("0").str("cpu").int(6).op('t', 'Q')
	p.int(3).ints(3).ints(1).op(0x89).global("collections", "OrderedDict").op(')', 'R', 't')
	p.op('}').str("note").str("x").op('s', 't', 'R', 's', '.')
	path := writeZip(t, entry{name: "archive/data.pkl", data: p.Bytes()}, entry{name: "archive/data/0", data: le32(1, 2, 3, 4, 5, 6)})
	s := openSource(t, Config{Path: path})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 2 || m.Tensors[1].Attr(tensor.AttrTiedTo) != "p" {
		t.Fatalf("manifest %+v", m.Tensors)
	}
	if got := readTensor(t, s, m.Tensors[1]); !bytes.Equal(got, le32(4, 5, 6)) {
		t.Errorf("t: %v", got)
	}
}

// TestDescribeReadsOnlyHeaders measures, by the process's read counter,
// that describing a checkpoint with a 64 MiB storage reads a few KiB.
func TestDescribeReadsOnlyHeaders(t *testing.T) {
	big := make([]byte, 64<<20)
	p := newPickle().op('}')
	p.str("big").tensorV2("ByteStorage", "0", int64(len(big)), 0, []int64{int64(len(big))}, []int64{1}).op('s', '.')
	path := writeZip(t, entry{name: "archive/data.pkl", data: p.Bytes()}, entry{name: "archive/data/0", data: big})
	before := plugintest.ReadChars(t)
	s := openSource(t, Config{Path: path})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if read := plugintest.ReadChars(t) - before; read > 256<<10 {
		t.Errorf("Describe of a %d-byte checkpoint read %d bytes", len(big), read)
	}
	if m.Tensors[0].Location == nil || m.Tensors[0].Location.Length != uint64(len(big)) {
		t.Errorf("no file reference for a stored contiguous tensor: %+v", m.Tensors[0])
	}
}

func TestModelKeyNextToTensorsIsNotUnwrapped(t *testing.T) {
	p := newPickle().op('}')
	p.str("model").op('}').str("w").tensorV2("FloatStorage", "0", 6, 0, []int64{6}, []int64{1}).op('s', 's')
	p.str("head").tensorV2("FloatStorage", "1", 6, 0, []int64{6}, []int64{1}).op('s', '.')
	data := le32(1, 2, 3, 4, 5, 6)
	s := openSource(t, Config{Path: writeZip(t, entry{name: "archive/data.pkl", data: p.Bytes()},
		entry{name: "archive/data/0", data: data}, entry{name: "archive/data/1", data: data})})
	m, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 2 || m.Tensors[0].Name != "model.w" || m.Tensors[1].Name != "head" {
		t.Errorf("tensors %+v, want model.w and head", m.Tensors)
	}
}
