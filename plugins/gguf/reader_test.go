package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// raw assembles GGUF bytes by hand, independently of the writer, so tests
// can build malformed files.
type raw struct{ bytes.Buffer }

func (r *raw) u8(v uint8) *raw    { r.WriteByte(v); return r }
func (r *raw) u32(v uint32) *raw  { binary.Write(r, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw  { binary.Write(r, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw  { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) pad(align int) *raw { r.Write(make([]byte, (align-r.Len()%align)%align)); return r }

func header(version uint32, nTensors, nKV uint64) *raw {
	r := &raw{}
	r.WriteString("GGUF")
	return r.u32(version).u64(nTensors).u64(nKV)
}

func parse(b []byte) (*File, error) { return NewFile(bytes.NewReader(b), int64(len(b)), "test.gguf") }

func TestReaderRefusesMalformedHeaders(t *testing.T) {
	f32Tensor := func(r *raw, name string, dims []uint64, typ uint32, off uint64) *raw {
		r.str(name).u32(uint32(len(dims)))
		for _, d := range dims {
			r.u64(d)
		}
		return r.u32(typ).u64(off)
	}
	cases := []struct {
		name string
		file []byte
		msg  string
	}{
		{"empty", nil, "magic"},
		{"version 0", header(0, 0, 0).Bytes(), "version 0"},
		{"version 1", header(1, 0, 0).Bytes(), "version 1"},
		{"version 4", header(4, 0, 0).Bytes(), "version 4"},
		{"byte-swapped", header(0x03000000, 0, 0).Bytes(), "big-endian"},
		{"negative tensor count", header(3, 1<<63, 0).Bytes(), "negative"},
		{"huge kv count", header(3, 0, 1<<40).Bytes(), "more bytes than"},
		{"2^60-byte key", header(3, 0, 1).u64(1 << 60).Bytes(), "more bytes than"},
		{"2^60-byte string", header(3, 0, 1).str("k").u32(8).u64(1 << 60).Bytes(), "more bytes than"},
		{"2^60-element array", header(3, 0, 1).str("k").u32(9).u32(4).u64(1 << 60).Bytes(), "over the limit"},
		{"2^29 u64 elements", header(3, 0, 1).str("k").u32(9).u32(10).u64(1 << 29).Bytes(), "more bytes than"},
		{"2^29 strings", header(3, 0, 1).str("k").u32(9).u32(8).u64(1 << 29).Bytes(), "more bytes than"},
		{"string element past end", header(3, 0, 1).str("k").u32(9).u32(8).u64(2).str("a").u64(99).Bytes(), "passes the end"},
		{"string element length cut", header(3, 0, 1).str("k").u32(9).u32(8).u64(2).str("abcdefghij").u32(1).u32(0).Bytes()[:71], "needs 8 bytes"},
		{"string element over the cap", header(3, 0, 1).str("k").u32(9).u32(8).u64(2).str("a").u64(MaxStringLen + 1).Bytes(), "over the limit"},
		{"too many nested arrays", header(3, 0, 1).str("k").u32(9).u32(9).u64(MaxNestedItems + 1).Bytes(), "over the limit"},
		{"invalid value type", header(3, 0, 1).str("k").u32(13).Bytes(), "invalid GGUF value type 13"},
		{"invalid element type", header(3, 0, 1).str("k").u32(9).u32(77).u64(0).Bytes(), "invalid element type 77"},
		{"empty key", header(3, 0, 1).str("").u32(4).u32(1).Bytes(), "empty key"},
		{"duplicate key", header(3, 0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(1).Bytes(), "appears twice"},
		{"alignment not u32", header(3, 0, 1).str(KeyAlignment).u32(10).u64(64).Bytes(), "must be a u32"},
		{"alignment not power of two", header(3, 0, 1).str(KeyAlignment).u32(4).u32(48).Bytes(), "power of two"},
		{"alignment zero", header(3, 0, 1).str(KeyAlignment).u32(4).u32(0).Bytes(), "power of two"},
		{"five dims", f32Tensor(header(3, 1, 0), "t", []uint64{1, 1, 1, 1, 1}, 0, 0).Bytes(), "at most 4"},
		{"negative dim", f32Tensor(header(3, 1, 0), "t", []uint64{1 << 63}, 0, 0).Bytes(), "negative"},
		{"element overflow", f32Tensor(header(3, 1, 0), "t", []uint64{1 << 32, 1 << 32}, 0, 0).Bytes(), "overflows"},
		{"removed type", f32Tensor(header(3, 1, 0), "t", []uint64{32}, 4, 0).Bytes(), "removed"},
		{"type out of range", f32Tensor(header(3, 1, 0), "t", []uint64{32}, 43, 0).Bytes(), "out of range"},
		{"row not whole blocks", f32Tensor(header(3, 1, 0), "t", []uint64{33}, 8, 0).Bytes(), "block size 32"},
		{"duplicate tensor", f32Tensor(f32Tensor(header(3, 2, 0), "t", []uint64{1}, 0, 0), "t", []uint64{1}, 0, 32).pad(32).u64(0).Bytes(), "appears twice"},
		{"empty tensor name", f32Tensor(header(3, 1, 0), "", []uint64{1}, 0, 0).Bytes(), "empty name"},
		{"offset not contiguous", f32Tensor(header(3, 1, 0), "t", []uint64{1}, 0, 32).pad(32).Write64(64), "expected 0"},
		{"data past end", f32Tensor(header(3, 1, 0), "t", []uint64{16}, 0, 0).pad(32).Write64(8), "past the end"},
	}
	for _, c := range cases {
		_, err := parse(c.file)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		var fe *binio.FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "test.gguf") {
			t.Errorf("%s: error %q, want a FormatError naming the file and saying %q", c.name, err, c.msg)
		}
	}
}

// Write64 appends n zero bytes and returns the buffer's bytes.
func (r *raw) Write64(n int) []byte { r.Write(make([]byte, n)); return r.Bytes() }

func TestReaderAcceptsVariants(t *testing.T) {
	// gguf-py keeps trailing 1-dims; ggml drops them: same shape.
	r := header(3, 2, 0)
	r.str("kept").u32(2).u64(256).u64(1).u32(0).u64(0)
	r.str("dropped").u32(1).u64(256).u32(0).u64(1024)
	r.str("scalar").u32(0) // n_dims 0 needs more bytes: this one is cut below
	b := r.Bytes()[:r.Len()-len("scalar")-8-4]
	hdr := &raw{}
	hdr.Write(b)
	hdr.pad(32).Write64(2048)
	// Fix the tensor count: two tensors.
	f, err := parse(hdr.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := f.Tensors[0].Shape(), f.Tensors[1].Shape(); len(a) != 1 || a[0] != 256 || len(b) != 1 || b[0] != 256 {
		t.Errorf("shapes %v and %v, want [256] twice", a, b)
	}
	if got := ShapeFromNe([]uint64{4, 3, 1, 1}); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Errorf("ShapeFromNe([4 3 1 1]) = %v", got)
	}
	if got := ShapeFromNe(nil); len(got) != 1 || got[0] != 1 {
		t.Errorf("ShapeFromNe(nil) = %v", got)
	}
	if got := NeFromShape([]uint64{1, 1, 5}); len(got) != 1 || got[0] != 5 {
		t.Errorf("NeFromShape([1 1 5]) = %v", got)
	}
	// Empty arrays, a bool stored as 2, and arrays nested to the cap.
	r = header(3, 0, 3)
	r.str("empty").u32(9).u32(8).u64(0)
	r.str("b").u32(7).u8(2)
	r.str("deep").u32(9)
	for i := 0; i < MaxArrayDepth-1; i++ {
		r.u32(9).u64(1)
	}
	r.u32(4).u64(1).u32(7)
	f, err = parse(r.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Metadata.Get("deep"); v.Depth() != MaxArrayDepth {
		t.Errorf("depth %d, want %d", v.Depth(), MaxArrayDepth)
	}
	if v, _ := f.Metadata.Get("b"); v.Type() != tensor.TypeBool {
		t.Errorf("b = %v", v)
	} else if b, _ := v.Bool(); !b {
		t.Errorf("bool byte 2 should read as true")
	}
	// One level deeper is refused.
	r = header(3, 0, 1)
	r.str("deep").u32(9)
	for i := 0; i < MaxArrayDepth; i++ {
		r.u32(9).u64(1)
	}
	r.u32(4).u64(1).u32(7)
	if _, err := parse(r.Bytes()); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("depth %d: %v", MaxArrayDepth+1, err)
	}
}

// TestStringArraysOfManyLengths reads string arrays of 1 to 5,000 elements
// of 0 to 299 bytes and one of 20 KiB, and a key after each array, which
// must be read from where the array ends.
func TestStringArraysOfManyLengths(t *testing.T) {
	for _, n := range []int{1, 3, 40, 700, 5000} {
		var want []string
		for i := range n {
			want = append(want, strings.Repeat(string(rune('a'+i%26)), (i*997)%300))
		}
		want[n/2] = strings.Repeat("long", 5<<10) // 20 KiB
		r := header(3, 0, 2)
		r.str("k").u32(9).u32(8).u64(uint64(n))
		for _, s := range want {
			r.str(s)
		}
		r.str("after").u32(4).u32(0xC0FFEE)
		f, err := parse(r.pad(32).Bytes())
		if err != nil {
			t.Fatalf("%d strings: %v", n, err)
		}
		v, _ := f.Metadata.Get("k")
		if v.Len() != n {
			t.Fatalf("%d strings: read %d", n, v.Len())
		}
		for i, w := range want {
			if got, _ := v.Index(i).Str(); got != w {
				t.Fatalf("%d strings: element %d is %d bytes %.20q…, want %d bytes %.20q…", n, i, len(got), got, len(w), w)
			}
		}
		if after, ok := f.Metadata.Get("after"); !ok {
			t.Errorf("%d strings: the key after the array is missing", n)
		} else if u, _ := after.Uint(); u != 0xC0FFEE {
			t.Errorf("%d strings: the key after the array reads %#x", n, u)
		}
	}
}

// vocabFile builds a GGUF header with an n-token vocabulary, scores and
// token types, as llama.cpp writes them.
func vocabFile(n int) []byte {
	r := header(3, 0, 4)
	r.str("general.architecture").u32(8).str("llama")
	r.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(uint64(n))
	for i := 0; i < n; i++ {
		r.str("tok" + strings.Repeat("é", i%5) + string(rune('a'+i%26)))
	}
	r.str("tokenizer.ggml.scores").u32(9).u32(6).u64(uint64(n))
	r.Write(make([]byte, 4*n))
	r.str("tokenizer.ggml.token_type").u32(9).u32(5).u64(uint64(n))
	r.Write(make([]byte, 4*n))
	return r.pad(32).Bytes()
}

func TestVocabularyParsesFast(t *testing.T) {
	if raceEnabled {
		t.Skip("timings are meaningless under the race detector")
	}
	b := vocabFile(150000)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Hour
	for i := 0; i < 5; i++ {
		before, ok := threadCPU()
		f, err := parse(b)
		after, _ := threadCPU()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Skip("no per-thread CPU time on this system")
		}
		best = min(best, after-before)
		v, _ := f.Metadata.Get("tokenizer.ggml.tokens")
		if s, _ := v.Index(1).Str(); v.Len() != 150000 || s != "tokéb" {
			t.Fatalf("%d tokens, token 1 = %q", v.Len(), s)
		}
	}
	t.Logf("150,000-token vocabulary: %v CPU (least of 5)", best)
	if best > 50*time.Millisecond {
		t.Errorf("parsing a 150,000-token vocabulary used %v of CPU, want well under 50 ms", best)
	}
}
