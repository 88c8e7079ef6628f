package codec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// elementTypes are the dtypes with one element per block.
var elementTypes = []tensor.DType{
	tensor.F64, tensor.F32, tensor.F16, tensor.BF16, tensor.F8E4M3, tensor.F8E5M2,
	tensor.I8, tensor.I16, tensor.I32, tensor.I64, tensor.U8, tensor.U16, tensor.U32, tensor.U64, tensor.Bool,
}

// decodeOnly are the block types that can be read but not written.
var decodeOnly = []tensor.DType{tensor.Q8_1, tensor.Q8_K}

func allDecodable() []tensor.DType {
	var out []tensor.DType
	out = append(out, elementTypes...)
	out = append(out, refTypes[2:]...) // the block types of the reference set
	return append(out, decodeOnly...)
}

func TestSupport(t *testing.T) {
	for _, dt := range allDecodable() {
		if !CanDecode(dt) {
			t.Errorf("CanDecode(%s) = false", dt)
		}
		wantEnc := true
		for _, d := range decodeOnly {
			if d == dt {
				wantEnc = false
			}
		}
		if CanEncode(dt) != wantEnc {
			t.Errorf("CanEncode(%s) = %v, want %v", dt, CanEncode(dt), wantEnc)
		}
		info, _ := dt.Info()
		if bs, ok := BlockSize(dt); !ok || uint64(bs) != info.BlockSize {
			t.Errorf("BlockSize(%s) = %d, %v", dt, bs, ok)
		}
	}
	// Types we do not implement fail with an error that names them.
	for _, dt := range []tensor.DType{tensor.IQ2XXS, tensor.IQ2XS, tensor.IQ3XXS, tensor.IQ1S, tensor.IQ3S, tensor.IQ2S, tensor.IQ1M, tensor.NVFP4, tensor.Q1_0, tensor.Q2_0, "no-such-type"} {
		if CanDecode(dt) || CanEncode(dt) {
			t.Errorf("%s claims support", dt)
		}
		err := DecodeFloat32(dt, make([]float32, 256), make([]byte, 1024))
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.DType != dt || !strings.Contains(err.Error(), string(dt)) {
			t.Errorf("DecodeFloat32(%s): error %v does not name the type", dt, err)
		}
		if err := EncodeFloat32(dt, make([]byte, 1024), make([]float32, 256)); !errors.As(err, &ue) {
			t.Errorf("EncodeFloat32(%s): got %v, want *UnsupportedError", dt, err)
		}
		if err := Convert(tensor.F32, dt, make([]byte, 1024), make([]byte, 1024), 256); !errors.As(err, &ue) {
			t.Errorf("Convert(f32→%s): got %v, want *UnsupportedError", dt, err)
		}
	}
	if err := EncodeFloat32(tensor.Q8_K, make([]byte, 292), make([]float32, 256)); err == nil {
		t.Error("EncodeFloat32(q8_K) succeeded; it is decode-only")
	}
}

func TestSizeErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"decode partial block", DecodeFloat32(tensor.Q4_0, make([]float32, 31), make([]byte, 18))},
		{"decode short source", DecodeFloat32(tensor.Q4_0, make([]float32, 32), make([]byte, 17))},
		{"decode long source", DecodeFloat32(tensor.F16, make([]float32, 2), make([]byte, 6))},
		{"encode partial block", EncodeFloat32(tensor.Q4_K, make([]byte, 144), make([]float32, 255))},
		{"encode short destination", EncodeFloat32(tensor.Q8_0, make([]byte, 33), make([]float32, 32))},
		{"convert wrong n", Convert(tensor.F32, tensor.F16, make([]byte, 8), make([]byte, 8), 3)},
		{"convert negative n", Convert(tensor.F32, tensor.F16, nil, nil, -1)},
		{"convert n not whole blocks", Convert(tensor.F32, tensor.Q8_0, make([]byte, 34), make([]byte, 64), 16)},
		{"rows zero length", ConvertRows(tensor.F32, tensor.F16, nil, nil, 0, 1)},
		{"rows not a multiple of the block", ConvertRows(tensor.F32, tensor.Q8_0, make([]byte, 34), make([]byte, 64), 16, 1)},
		{"rows ragged source", ConvertRows(tensor.F32, tensor.F16, make([]byte, 4), make([]byte, 10), 2, 1)},
		{"rows wrong destination", ConvertRows(tensor.F32, tensor.F16, make([]byte, 6), make([]byte, 8), 2, 1)},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	// Empty input is fine.
	if err := Convert(tensor.F32, tensor.Q4_K, nil, nil, 0); err != nil {
		t.Errorf("empty convert: %v", err)
	}
	if err := ConvertRows(tensor.F32, tensor.Q4_K, nil, nil, 256, 4); err != nil {
		t.Errorf("empty convert rows: %v", err)
	}
}

// TestIntegers pins the documented integer and bool conversions.
func TestIntegers(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		dt   tensor.DType
		in   float32
		want float64
	}{
		{tensor.I8, 2.5, 2}, {tensor.I8, 3.5, 4}, {tensor.I8, -2.5, -2}, {tensor.I8, -0.5, 0}, {tensor.I8, 127.4, 127},
		{tensor.I8, 200, 127}, {tensor.I8, -1e9, -128}, {tensor.I8, nan, 0}, {tensor.I8, inf, 127}, {tensor.I8, -inf, -128},
		{tensor.U8, -3, 0}, {tensor.U8, 255.5, 255}, {tensor.U8, 254.5, 254}, {tensor.U8, nan, 0},
		{tensor.I16, 40000, 32767}, {tensor.I16, -40000, -32768}, {tensor.U16, 65535.4, 65535},
		{tensor.I32, 3e9, math.MaxInt32}, {tensor.I32, -3e9, math.MinInt32}, {tensor.I32, 16777217, 16777216},
		{tensor.U32, 5e9, math.MaxUint32}, {tensor.U32, -1, 0},
		{tensor.I64, 1e19, math.MaxInt64}, {tensor.I64, -1e19, math.MinInt64}, {tensor.I64, -9.223372e18, -9223372036854775808},
		{tensor.U64, 1e20, math.MaxUint64}, {tensor.U64, 1.5, 2},
		{tensor.Bool, 0, 0}, {tensor.Bool, float32(math.Copysign(0, -1)), 0}, {tensor.Bool, 0.1, 1}, {tensor.Bool, -3, 1}, {tensor.Bool, nan, 1},
	}
	for _, c := range cases {
		info, _ := c.dt.Info()
		b := make([]byte, info.BlockBytes)
		if err := EncodeFloat32(c.dt, b, []float32{c.in}); err != nil {
			t.Fatal(err)
		}
		var got float64
		switch c.dt {
		case tensor.I8:
			got = float64(int8(b[0]))
		case tensor.U8, tensor.Bool:
			got = float64(b[0])
		case tensor.I16:
			got = float64(int16(uint16(b[0]) | uint16(b[1])<<8))
		case tensor.U16:
			got = float64(uint16(b[0]) | uint16(b[1])<<8)
		case tensor.I32:
			got = float64(int32(leU64(b)))
		case tensor.U32:
			got = float64(uint32(leU64(b)))
		case tensor.I64:
			got = float64(int64(leU64(b)))
		case tensor.U64:
			got = float64(leU64(b))
		}
		if got != c.want {
			t.Errorf("encode %s(%g) = %g, want %g", c.dt, c.in, got, c.want)
		}
	}
	// Decoding: exact up to 2^24, then round to nearest even.
	dec := func(dt tensor.DType, b []byte) float32 {
		var out [1]float32
		if err := DecodeFloat32(dt, out[:], b); err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	if got := dec(tensor.I8, []byte{0x80}); got != -128 {
		t.Errorf("decode i8 0x80 = %g", got)
	}
	if got := dec(tensor.I32, []byte{1, 0, 0, 1}); got != 16777216 { // 2^24+1 ties to even
		t.Errorf("decode i32 2^24+1 = %g", got)
	}
	if got := dec(tensor.U64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); got != 1<<64 {
		t.Errorf("decode u64 max = %g", got)
	}
	if got := dec(tensor.Bool, []byte{7}); got != 1 {
		t.Errorf("decode bool 7 = %g", got)
	}
}

func leU64(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// specialValues are float32 inputs every codec must survive.
var specialValues = []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -2.5, 65504, 65520, 1e-8, -6e-8, 1e-40,
	3e38, -3e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 448, 464, 480, 57344, 61440}

// testInput returns n values: normal data at a few scales mixed with the
// special values.
func testInput(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		switch r.IntN(20) {
		case 0:
			x[i] = specialValues[r.IntN(len(specialValues))]
		case 1:
			x[i] = float32(r.IntN(21) - 10)
		default:
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
		}
	}
	return x
}

// TestConvertMatchesEncodeDecode checks the promise of Convert for every pair
// of supported types: the result equals EncodeFloat32(DecodeFloat32(...)),
// through the direct kernels, the float32 views and the chunked path alike.
func TestConvertMatchesEncodeDecode(t *testing.T) {
	const n = chunkElems + 256 // more than one chunk: exercises the scratch loop
	x := testInput(n, 7)
	var froms, tos []tensor.DType
	for _, dt := range allDecodable() {
		froms = append(froms, dt)
		if CanEncode(dt) {
			tos = append(tos, dt)
		}
	}
	for _, from := range froms {
		src := make([]byte, mustSize(t, from, n))
		if CanEncode(from) {
			if err := EncodeFloat32(from, src, x); err != nil {
				t.Fatal(err)
			}
		} else {
			r := rand.New(rand.NewPCG(1, 1))
			for i := range src {
				src[i] = byte(r.Uint32())
			}
		}
		mid := make([]float32, n)
		if err := DecodeFloat32(from, mid, src); err != nil {
			t.Fatal(err)
		}
		for _, to := range tos {
			want := make([]byte, mustSize(t, to, n))
			if err := EncodeFloat32(to, want, mid); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(want))
			if err := Convert(from, to, got, src, n); err != nil {
				t.Fatalf("Convert(%s→%s): %v", from, to, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Convert(%s→%s) differs from EncodeFloat32(DecodeFloat32())", from, to)
			}
			// A misaligned source or destination must not change anything.
			src1 := append(make([]byte, 1, len(src)+1), src...)[1:]
			got1 := make([]byte, len(want)+1)[1:]
			if err := Convert(from, to, got1, src1, n); err != nil || !bytes.Equal(got1, want) {
				t.Errorf("Convert(%s→%s) on unaligned buffers differs (%v)", from, to, err)
			}
		}
	}
}

func mustSize(t testing.TB, dt tensor.DType, n int) int {
	t.Helper()
	s, err := dt.ByteSize(uint64(n))
	if err != nil {
		t.Fatal(err)
	}
	return int(s)
}

// TestConvertRowsDeterministic checks that the output does not depend on the
// number of workers, for rows that split into several pieces and for a single
// long row.
func TestConvertRowsDeterministic(t *testing.T) {
	x := testInput(1<<16, 9)
	src := make([]byte, 4*len(x))
	if err := EncodeFloat32(tensor.F32, src, x); err != nil {
		t.Fatal(err)
	}
	bf := make([]byte, 2*len(x))
	if err := EncodeFloat32(tensor.BF16, bf, x); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		from, to tensor.DType
		src      []byte
	}{
		{tensor.F32, tensor.Q8_0, src}, {tensor.F32, tensor.Q4_K, src}, {tensor.F32, tensor.F16, src},
		{tensor.BF16, tensor.Q6_K, bf}, {tensor.BF16, tensor.F32, bf}, {tensor.F32, tensor.IQ4XS, src},
	}
	for _, c := range cases {
		for _, rowLen := range []int{4096, len(x)} {
			n := mustSize(t, c.to, len(x))
			want := make([]byte, n)
			if err := ConvertRows(c.from, c.to, want, c.src, rowLen, 1); err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{2, 3, 8, 0} {
				got := make([]byte, n)
				if err := ConvertRows(c.from, c.to, got, c.src, rowLen, workers); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("ConvertRows(%s→%s, row %d) with %d workers differs from 1 worker", c.from, c.to, rowLen, workers)
				}
			}
			serial := make([]byte, n)
			if err := Convert(c.from, c.to, serial, c.src, len(x)); err != nil || !bytes.Equal(serial, want) {
				t.Errorf("ConvertRows(%s→%s) differs from Convert (%v)", c.from, c.to, err)
			}
		}
	}
}

// TestNoAllocations checks that conversions do not allocate once warm.
func TestNoAllocations(t *testing.T) {
	x := testInput(3*chunkElems, 3)
	f32 := make([]byte, 4*len(x))
	_ = EncodeFloat32(tensor.F32, f32, x)
	q := make([]byte, mustSize(t, tensor.Q4_K, len(x)))
	h := make([]byte, 2*len(x))
	unaligned := append(make([]byte, 1, len(f32)+1), f32...)[1:]
	for _, c := range []struct {
		from, to tensor.DType
		dst, src []byte
	}{
		{tensor.F32, tensor.Q4_K, q, f32}, {tensor.F32, tensor.Q4_K, q, unaligned}, {tensor.Q4_K, tensor.F16, h, q},
		{tensor.F32, tensor.F16, h, f32}, {tensor.F16, tensor.BF16, f32[:len(h)], h},
	} {
		allocs := testing.AllocsPerRun(5, func() {
			if err := Convert(c.from, c.to, c.dst, c.src, len(x)); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("Convert(%s→%s) allocates %v times per call", c.from, c.to, allocs)
		}
	}
}

// FuzzDecodeFloat32 decodes arbitrary bytes as every decodable dtype: it
// must never panic, whatever the bytes.
func FuzzDecodeFloat32(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add(bytes.Repeat([]byte{0xff}, 292), uint8(20))
	f.Add(bytes.Repeat([]byte{0x7c, 0x00}, 300), uint8(2))
	types := allDecodable()
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		dt := types[int(which)%len(types)]
		info, _ := dt.Info()
		blocks := len(data) / int(info.BlockBytes)
		data = data[:blocks*int(info.BlockBytes)]
		dst := make([]float32, blocks*int(info.BlockSize))
		if err := DecodeFloat32(dt, dst, data); err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		// Wrong sizes are errors, not panics.
		if len(data) > 0 {
			_ = DecodeFloat32(dt, dst, data[1:])
			_ = DecodeFloat32(dt, dst[1:], data)
		}
		// Converting the decoded values on to f16 must agree with Convert.
		h := make([]byte, 2*len(dst))
		if err := Convert(dt, tensor.F16, h, data, len(dst)); err != nil {
			t.Fatal(err)
		}
	})
}
