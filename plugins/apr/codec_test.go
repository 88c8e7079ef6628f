package apr

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestQ8KnownBytes(t *testing.T) {
	got := EncodeQ8([]float32{127, -63.5, 0, 200 * 0})
	want := []byte{0x00, 0x00, 0x80, 0x3f, 0x7f, 0xc0, 0x00, 0x00} // scale 1.0; -63.5 rounds away from zero
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeQ8 = % x, want % x", got, want)
	}
	vals, err := DecodeQ8(got, 4)
	if err != nil || vals[0] != 127 || vals[1] != -64 || vals[2] != 0 {
		t.Errorf("DecodeQ8 = %v %v", vals, err)
	}
	if b := EncodeQ8(nil); len(b) != 0 || Q8Size(0) != 0 {
		t.Errorf("empty tensor: %d bytes", len(b))
	}
	nan := EncodeQ8([]float32{float32(math.NaN()), 1, float32(math.Inf(-1))})
	if math.Float32frombits(binary.LittleEndian.Uint32(nan)) != float32(math.Inf(1))/127 || nan[4] != 0 || nan[5] != 0 {
		t.Errorf("NaN and Inf: % x", nan)
	}
	allZero := EncodeQ8(make([]float32, 3))
	if !bytes.Equal(allZero, []byte{0, 0, 0x80, 0x3f, 0, 0, 0}) {
		t.Errorf("all zero: % x", allZero)
	}
	if _, err := DecodeQ8(got, 5); err == nil {
		t.Error("wrong size decoded")
	}
}

func TestQ4KnownBytes(t *testing.T) {
	got := EncodeQ4([]float32{7, -7, 3.5, -3.5, 0, 1})
	want := make([]byte, 18)
	want[0], want[1] = 0x00, 0x3c // f16 1.0
	want[2], want[3], want[4] = 0x1f, 0x4c, 0x98
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeQ4 = % x\nwant % x", got, want)
	}
	vals, err := DecodeQ4(got, 6)
	if err != nil || !slices.Equal(vals, []float32{7, -7, 4, -4, 0, 1}) {
		t.Errorf("DecodeQ4 = %v %v", vals, err)
	}
	// 33 elements: two blocks, the second padded.
	vs := make([]float32, 33)
	vs[32] = -2
	b := EncodeQ4(vs)
	if len(b) != 36 || Q4Size(33) != 36 {
		t.Fatalf("33 elements: %d bytes", len(b))
	}
	if !bytes.Equal(b[:18], append([]byte{0x00, 0x3c}, bytes.Repeat([]byte{0x88}, 16)...)) {
		t.Errorf("an all-zero block: % x", b[:18])
	}
	if b[20] != 0x01 || !bytes.Equal(b[21:], make([]byte, 15)) {
		t.Errorf("padded block: % x", b[18:])
	}
	// A subnormal, NaN or infinite scale decodes as zero.
	for _, bits := range []uint16{0x0001, 0x7e00, 0x7c00} {
		blk := append(binary.LittleEndian.AppendUint16(nil, bits), bytes.Repeat([]byte{0xff}, 16)...)
		v, _ := DecodeQ4(blk, 2)
		if v[0] != 0 || v[1] != 0 {
			t.Errorf("scale %#04x decoded as %v", bits, v)
		}
	}
}

// Quantize then dequantize stays within half a step of each group's scale.
func TestAPRQuantBounds(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	vals := make([]float32, 1000)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	q8, _ := DecodeQ8(EncodeQ8(vals), len(vals))
	var maxAbs float64
	for _, v := range vals {
		maxAbs = math.Max(maxAbs, math.Abs(float64(v)))
	}
	for i := range vals {
		if d := math.Abs(float64(q8[i] - vals[i])); d > maxAbs/127/2*1.0001 {
			t.Fatalf("q8 error %g at %d", d, i)
		}
	}
	q4, _ := DecodeQ4(EncodeQ4(vals), len(vals))
	for b := 0; b < len(vals); b += 32 {
		var m float64
		for _, v := range vals[b:min(b+32, len(vals))] {
			m = math.Max(m, math.Abs(float64(v)))
		}
		for i := b; i < min(b+32, len(vals)); i++ {
			if d := math.Abs(float64(q4[i] - vals[i])); d > m/7/2*1.01+1e-6 {
				t.Fatalf("q4 error %g at %d (block max %g)", d, i, m)
			}
		}
	}
}

// lz4Inputs covers chunk boundaries, incompressible runs longer than a
// chunk (carried literals), long matches and tiny inputs.
func lz4Inputs() map[string][]byte {
	rng := rand.New(rand.NewSource(3))
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog. "), 250_000)
	mixed := append(randBytes(rng, 5<<20), make([]byte, 3<<20)...)
	mixed = append(mixed, randBytes(rng, 100)...)
	return map[string][]byte{
		"empty":  {},
		"one":    {7},
		"tiny":   []byte("abcabcabcabc"),
		"text":   text,
		"random": randBytes(rng, 9<<20),
		"zeros":  make([]byte, 9<<20+13),
		"mixed":  mixed,
	}
}

func TestLZ4BlockEncoderAgainstPierrec(t *testing.T) {
	for name, in := range lz4Inputs() {
		var buf bytes.Buffer
		if err := writeLZ4Block(&buf, bytes.NewReader(in), 0, int64(len(in))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b := buf.Bytes()
		if got := binary.LittleEndian.Uint32(b); got != uint32(len(in)) {
			t.Fatalf("%s: size prefix %d, want %d", name, got, len(in))
		}
		// The reference decoder decodes the block as one.
		out := make([]byte, len(in))
		n, err := lz4.UncompressBlock(b[4:], out)
		if err != nil || n != len(in) || !bytes.Equal(out, in) {
			t.Fatalf("%s: pierrec decodes %d bytes (%v)", name, n, err)
		}
		// And so does the streaming decoder.
		got, err := io.ReadAll(newLZ4BlockReader(bytes.NewReader(b[4:])))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%s: stream decoder gave %d bytes (%v)", name, len(got), err)
		}
		if name == "zeros" && len(b) > len(in)/200 {
			t.Errorf("zeros compressed to %d bytes", len(b))
		}
	}
}

func TestLZ4BlockDecoderOnPierrecBlocks(t *testing.T) {
	for name, in := range lz4Inputs() {
		if len(in) > 8<<20 {
			in = in[:8<<20]
		}
		dst := make([]byte, lz4.CompressBlockBound(len(in)))
		var c lz4.CompressorHC
		n, err := c.CompressBlock(in, dst)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(newLZ4BlockReader(bytes.NewReader(dst[:n])))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%s: %d bytes (%v)", name, len(got), err)
		}
	}
}

func TestLZ4BlockDecoderRejectsBadOffsets(t *testing.T) {
	for _, bad := range [][]byte{
		{0x10, 'a', 0x05, 0x00},       // offset 5 after 1 byte
		{0x10, 'a', 0x00, 0x00},       // offset 0
		{0x1f, 'a', 0x01},             // truncated offset
		{0xf0},                        // literal length never ends
		{0x50, 'a', 'b'},              // literals cut short
		{0x1f, 'a', 0x01, 0x00, 0xff}, // match length never ends
	} {
		if _, err := io.ReadAll(newLZ4BlockReader(bytes.NewReader(bad))); err == nil {
			t.Errorf("% x decoded without error", bad)
		}
	}
}

// A compressed file whose content is far larger than the file itself is
// refused as a decompression bomb rather than decompressed.
func TestDecompressionBomb(t *testing.T) {
	defer func(a int64) { ratioAllowance = a }(ratioAllowance)
	ratioAllowance = 1 << 20 // instead of 64 MiB, to keep the test small
	mo := &model{}
	mo.add("zeros", tensor.F32, []uint64{2 << 20}, make([]byte, 8<<20))
	for _, opts := range []WriteOptions{{Compression: CompressionZstd}, {Layout: LayoutSpec, Compression: CompressionZstd}} {
		path := filepath.Join(t.TempDir(), "bomb.apr")
		write(t, path, opts, mo)
		fi, _ := os.Stat(path)
		if fi.Size() > (8<<20)/MaxCompressionRatio {
			t.Fatalf("test file too large to be a bomb: %d bytes", fi.Size())
		}
		err := readEverything(mustRead(t, path), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "decompression bomb") {
			t.Errorf("%s: %v, want a decompression bomb error", optsName(opts), err)
		}
		f, _ := os.Open(path)
		err = streamEverything(mustReadAll(t, f))
		f.Close()
		if err == nil || !strings.Contains(err.Error(), "decompression bomb") {
			t.Errorf("%s stream: %v, want a decompression bomb error", optsName(opts), err)
		}
	}
}

// An LZ4 size prefix larger than the data is an integrity error, not an
// allocation.
func TestLZ4PrefixLies(t *testing.T) {
	b := writeBytes(t, WriteOptions{Compression: CompressionLZ4}, goldenModel())
	binary.LittleEndian.PutUint32(b[64:], 0xfffffff0)
	h := parseAprenderHeader(b)
	binary.LittleEndian.PutUint32(h.Reserved[:], crc32.ChecksumIEEE(b[64:])) // keep the payload CRC right
	copy(b, h.sealed())
	if err := readEverything(b, t.TempDir()); !errors.Is(err, ErrChecksum) {
		t.Errorf("got %v, want a checksum error", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustReadAll(t *testing.T, r io.Reader) []byte {
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// genStream generates an aprender-layout file with one tensor of n zero
// bytes, front to back, computing the footer as it goes: a file larger
// than the memory the test allows the reader.
type genStream struct {
	prologue []byte
	n, pos   int64
	total    int64
	crc      uint32
	footer   []byte
}

func newGenStream(t *testing.T, n int64) *genStream {
	mo := &model{}
	mo.add("big", tensor.F32, []uint64{uint64(n / 4)}, nil)
	mo.m.Tensors[0].Size = uint64(n)
	meta, err := buildMeta(&mo.m)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := planFiles("x.apr", WriteOptions{Layout: LayoutAprender, Compression: CompressionNone}, &mo.m, meta)
	if err != nil {
		t.Fatal(err)
	}
	fp := plans[0]
	return &genStream{prologue: fp.prologue(LayoutAprender), n: int64(fp.size) - 4, total: int64(fp.size)}
}

func (g *genStream) Read(p []byte) (int, error) {
	if g.pos >= g.total {
		return 0, io.EOF
	}
	var n int
	switch {
	case g.pos < int64(len(g.prologue)):
		n = copy(p, g.prologue[g.pos:])
	case g.pos < g.n:
		n = int(min(int64(len(p)), g.n-g.pos))
		clear(p[:n])
	default:
		if g.footer == nil {
			g.footer = binary.LittleEndian.AppendUint32(nil, g.crc)
		}
		n = copy(p, g.footer[g.pos-g.n:])
		g.pos += int64(n)
		return n, nil
	}
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p[:n])
	g.pos += int64(n)
	return n, nil
}

// The stream reader reads a 512 MiB file from a plain io.Reader with its
// heap staying small.
func TestStreamBoundedMemory(t *testing.T) {
	const size = 512 << 20
	g := newGenStream(t, size)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	sr, err := NewStreamReader(g, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var peak uint64
	buf := make([]byte, 1<<20)
	for {
		tt, data, err := sr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for {
			n, err := data.Read(buf)
			got += int64(n)
			if got%(64<<20) < int64(n) {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if got != int64(tt.RawSize) {
			t.Fatalf("%s: %d bytes, want %d", tt.Name, got, tt.RawSize)
		}
	}
	if grown := int64(peak) - int64(before.HeapInuse); grown > 16<<20 {
		t.Errorf("the heap grew by %d MiB reading a 512 MiB stream", grown>>20)
	}
}

// The sink's memory does not grow with the model: compressed tensors are
// spooled in chunks.
func TestSinkCompressedChunksSpooled(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(4))
	big := randBytes(rng, 3<<20+17)
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "big", DType: tensor.F32, Shape: []uint64{uint64(len(big) / 4)}}}}
	big = big[:len(big)/4*4]
	m.Tensors[0].Size = uint64(len(big))
	for _, c := range []Compression{CompressionLZ4, CompressionZstd} {
		path := filepath.Join(t.TempDir(), "m.apr")
		s := NewSink(path, WriteOptions{Layout: LayoutSpec, Compression: c})
		if err := s.Begin(ctx, m, plugin.BeginOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, "big", plugin.BytesData(big)); err != nil {
			t.Fatal(err)
		}
		if n := len(s.files[0].chunks[0]); n != 1 {
			t.Errorf("%s: %d spool regions for one tensor written alone, want 1 (merged)", c, n)
		}
		if _, err := s.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		r, err := OpenFile(path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkReader(t, r, &model{m: *m, data: map[string][]byte{"big": big}})
		r.Close()
	}
}
