package apr

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

// everyDType builds a model with one tensor of every writable dtype (with
// random bytes, NaN patterns included), plus an empty and a scalar tensor.
func everyDType(seed int64) *model {
	rng := rand.New(rand.NewSource(seed))
	mo := &model{}
	mo.m.Metadata.Set("model_type", tensor.StringValue("test"))
	mo.m.Metadata.Set("note", tensor.StringValue("every dtype"))
	mo.add("a.f32", tensor.F32, []uint64{3, 5}, randBytes(rng, 60))
	mo.add("b.f16", tensor.F16, []uint64{4}, randBytes(rng, 8))
	mo.add("c.bf16", tensor.BF16, []uint64{2, 3}, randBytes(rng, 12))
	mo.add("d.q4_K", tensor.Q4_K, []uint64{1, 256}, randBytes(rng, 144))
	mo.add("e.q6_K", tensor.Q6_K, []uint64{2, 256}, randBytes(rng, 420))
	vals := make([]float32, 40)
	for i := range vals {
		vals[i] = rng.Float32()*8 - 4
	}
	mo.add("f.apr_q4", Q4, []uint64{5, 8}, EncodeQ4(vals))
	mo.add("g.apr_q8", Q8, []uint64{7}, EncodeQ8(vals[:7]))
	mo.add("h.empty", tensor.F32, []uint64{0, 4}, nil)
	mo.add("i.scalar", tensor.F32, nil, f32Bytes(3.5))
	// Large enough for several LZ4 chunks and zstd blocks, compressible.
	big := make([]byte, 4*300_000)
	for i := range big {
		big[i] = byte(i % 251 / 7)
	}
	mo.add("j.big", tensor.F32, []uint64{300_000}, big)
	return mo
}

// readAll reads every tensor of a file through Reader and checks it
// against the model.
func checkReader(t *testing.T, r *Reader, mo *model) {
	t.Helper()
	if len(r.Tensors) != len(mo.m.Tensors) {
		t.Fatalf("%d tensors read, %d written", len(r.Tensors), len(mo.m.Tensors))
	}
	for i := 1; i < len(r.Tensors); i++ {
		if r.Tensors[i-1].Name >= r.Tensors[i].Name {
			t.Errorf("index not sorted by name: %q before %q", r.Tensors[i-1].Name, r.Tensors[i].Name)
		}
	}
	for _, want := range mo.m.Tensors {
		got, ok := r.Tensor(want.Name)
		if !ok {
			t.Fatalf("tensor %q missing", want.Name)
		}
		if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || got.RawSize != want.Size {
			t.Errorf("%s: read %s %v %d, wrote %s %v %d", want.Name, got.DType, got.Shape, got.RawSize, want.DType, want.Shape, want.Size)
		}
		rc, err := r.Open(got)
		if err != nil {
			t.Fatalf("%s: %v", want.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", want.Name, err)
		}
		if !bytes.Equal(b, mo.data[want.Name]) {
			t.Errorf("%s: bytes differ after the round trip", want.Name)
		}
	}
}

// FALSIFY-FMT-002: serialize → deserialize gives bitwise identical
// tensors, for every writable dtype, every layout and compression, through
// both readers.
func TestRoundTripEveryDType(t *testing.T) {
	for _, opts := range allLayouts {
		t.Run(optsName(opts), func(t *testing.T) {
			mo := everyDType(1)
			path := filepath.Join(t.TempDir(), "m.apr")
			write(t, path, opts, mo)
			r, err := OpenFile(path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Layout != opts.Layout || r.Compression != opts.Compression {
				t.Errorf("read layout %s/%s", r.Layout, r.Compression)
			}
			checkReader(t, r, mo)
			if got := r.Metadata.String("note"); got != "every dtype" {
				t.Errorf("metadata note = %q", got)
			}
			f, _ := os.Open(path)
			defer f.Close()
			checkStream(t, f, mo)
		})
	}
}

// checkStream reads a file front to back with the stream reader.
func checkStream(t *testing.T, src io.Reader, mo *model) {
	t.Helper()
	sr, err := NewStreamReader(src, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	seen := 0
	var lastOff uint64
	for {
		tt, data, err := sr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if tt.Offset < lastOff {
			t.Errorf("stream yields %q out of file order", tt.Name)
		}
		lastOff = tt.Offset
		b, err := io.ReadAll(data)
		if err != nil {
			t.Fatalf("stream %s: %v", tt.Name, err)
		}
		if !bytes.Equal(b, mo.data[tt.Name]) {
			t.Errorf("stream %s: bytes differ", tt.Name)
		}
		seen++
	}
	if seen != len(mo.m.Tensors) {
		t.Errorf("stream yielded %d tensors, want %d", seen, len(mo.m.Tensors))
	}
}

// FALSIFY-FMT-001: every section and every tensor starts on a 64-byte
// boundary, in every layout.
func TestAlignment(t *testing.T) {
	for _, opts := range allLayouts {
		t.Run(optsName(opts), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.apr")
			write(t, path, opts, everyDType(2))
			r, err := OpenFile(path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.IndexOffset%64 != 0 || r.DataOffset%64 != 0 {
				t.Errorf("index at %d, data at %d: not 64-aligned", r.IndexOffset, r.DataOffset)
			}
			for _, tt := range r.Tensors {
				if (r.DataOffset+tt.Offset)%64 != 0 {
					t.Errorf("%s at %d: not 64-aligned", tt.Name, r.DataOffset+tt.Offset)
				}
			}
		})
	}
}

// FALSIFY-FMT-003: a wrong magic is an error naming what was found, never
// a panic.
func TestWrongMagic(t *testing.T) {
	good := writeBytes(t, WriteOptions{Layout: LayoutAprender}, goldenModel())
	// A v1 header: magic, version 1.0, model type 1, sizes, zstd.
	v1 := append([]byte("APRN\x01\x00\x01\x00"), make([]byte, 24)...)
	v1[8], v1[12], v1[16], v1[20] = 10, 20, 20, 1
	v1 = append(v1, bytes.Repeat([]byte{0x5a}, 64)...)
	cases := map[string][]byte{
		"all 0xff": bytes.Repeat([]byte{0xff}, 600),
		"all 0x00": make([]byte, 600),
		"APRN v1":  v1,
		"APR1":     append([]byte("APR1"), v1[4:]...),
		"GGUF":     append([]byte("GGUF"), good[4:]...),
		"short":    []byte("AP"),
		"empty":    nil,
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{Name: "x.apr"})
			if !errors.Is(err, ErrNotAPR) {
				t.Fatalf("NewReader: %v, want ErrNotAPR", err)
			}
			_, err = NewStreamReader(bytes.NewReader(b), ReadOptions{Name: "x.apr"})
			if !errors.Is(err, ErrNotAPR) {
				t.Fatalf("NewStreamReader: %v, want ErrNotAPR", err)
			}
		})
	}
	_, err := NewReader(bytes.NewReader(v1), int64(len(v1)), ReadOptions{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("v1")) {
		t.Errorf("APRN error does not say v1: %v", err)
	}
}

// FALSIFY-FMT-004: flipping any byte of a file gives a checksum error,
// for every layout and compression, through both readers.
func TestFlipEveryByte(t *testing.T) {
	for _, opts := range allLayouts {
		t.Run(optsName(opts), func(t *testing.T) {
			t.Parallel()
			good := writeBytes(t, opts, goldenModel())
			dir := t.TempDir()
			if err := readEverything(good, dir); err != nil {
				t.Fatalf("the undamaged file: %v", err)
			}
			if err := streamEverything(good); err != nil {
				t.Fatalf("the undamaged file, streamed: %v", err)
			}
			for i := range good {
				for _, x := range []byte{0xff, 0x01} {
					b := bytes.Clone(good)
					b[i] ^= x
					if err := readEverything(b, dir); !errors.Is(err, ErrChecksum) {
						t.Fatalf("byte %d ^ %#x: Reader gave %v, want a checksum error", i, x, err)
					}
					if err := streamEverything(b); !errors.Is(err, ErrChecksum) {
						t.Fatalf("byte %d ^ %#x: StreamReader gave %v, want a checksum error", i, x, err)
					}
				}
			}
		})
	}
}

// readEverything reads a file and all its tensors, returning the first
// error.
func readEverything(b []byte, tmp string) error {
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{TempDir: tmp})
	if err != nil {
		return err
	}
	defer r.Close()
	for i := range r.Tensors {
		rc, err := r.Open(&r.Tensors[i])
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func streamEverything(b []byte) error {
	sr, err := NewStreamReader(bytes.NewReader(b), ReadOptions{})
	if err != nil {
		return err
	}
	defer sr.Close()
	for {
		_, data, err := sr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, data); err != nil {
			return err
		}
	}
}

func TestNoVerifySkipsFooter(t *testing.T) {
	for _, opts := range allLayouts {
		t.Run(optsName(opts), func(t *testing.T) {
			b := writeBytes(t, opts, goldenModel())
			at := len(b) - 1 // damage the footer's checksum only
			if opts.Layout == LayoutSpec {
				at = len(b) - specFooterSize
			}
			b[at] ^= 0xff
			if _, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{}); !errors.Is(err, ErrChecksum) {
				t.Fatalf("verify: %v, want a checksum error", err)
			}
			r, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{NoVerify: true})
			if err != nil {
				t.Fatalf("NoVerify: %v", err)
			}
			checkReader(t, r, goldenModel())
			r.Close()
			sr, err := NewStreamReader(bytes.NewReader(b), ReadOptions{NoVerify: true})
			if err != nil {
				t.Fatal(err)
			}
			for {
				_, d, err := sr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("stream NoVerify: %v", err)
				}
				io.Copy(io.Discard, d)
			}
		})
	}
}

func TestHeaderCRCCheckedEvenWithoutVerify(t *testing.T) {
	b := writeBytes(t, WriteOptions{Layout: LayoutAprender}, goldenModel())
	b[8] ^= 1 // tensor count
	if _, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{NoVerify: true}); !errors.Is(err, ErrChecksum) {
		t.Fatalf("got %v, want a header checksum error", err)
	}
}

func TestColumnMajorRefused(t *testing.T) {
	b := writeBytes(t, WriteOptions{Layout: LayoutAprender}, goldenModel())
	h := parseAprenderHeader(b)
	if h.Flags&FlagLayoutRowMajor == 0 {
		t.Fatalf("writer did not set LAYOUT_ROW_MAJOR: flags %#x", h.Flags)
	}
	h.Flags = h.Flags&^FlagLayoutRowMajor | FlagLayoutColMajor
	copy(b, h.sealed())
	_, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{NoVerify: true})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("COLUMN_MAJOR")) {
		t.Fatalf("column-major file: %v", err)
	}
}

func TestTruncatedFile(t *testing.T) {
	for _, opts := range allLayouts {
		b := writeBytes(t, opts, everyDType(3))
		for _, n := range []int{0, 3, 10, 40, 63, 64, 100, len(b) / 2, len(b) - 5, len(b) - 1} {
			if _, err := NewReader(bytes.NewReader(b[:n]), int64(n), ReadOptions{NoVerify: true}); err == nil && n < len(b)-16 {
				t.Errorf("%s: truncated to %d of %d bytes: no error", optsName(opts), n, len(b))
			}
			if err := readEverything(b[:n], t.TempDir()); err == nil {
				t.Errorf("%s: truncated to %d of %d bytes (verified): no error", optsName(opts), n, len(b))
			}
			if err := streamEverything(b[:n]); err == nil {
				t.Errorf("%s: stream truncated to %d of %d bytes: no error", optsName(opts), n, len(b))
			}
		}
	}
}

func TestEmptyModel(t *testing.T) {
	for _, opts := range allLayouts {
		mo := &model{data: map[string][]byte{}}
		b := writeBytes(t, opts, mo)
		if err := readEverything(b, t.TempDir()); err != nil {
			t.Errorf("%s: %v", optsName(opts), err)
		}
		if err := streamEverything(b); err != nil {
			t.Errorf("%s stream: %v", optsName(opts), err)
		}
	}
}
