package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestQTensorDTypesAreRegistered(t *testing.T) {
	for _, dt := range QTensorDTypes() {
		info, ok := dt.Info()
		if !ok || info.Kind != tensor.KindQTensor {
			t.Errorf("%s: registry says %+v, %v", dt, info, ok)
		}
		if !IsQTensor(dt) {
			t.Errorf("IsQTensor(%s) is false", dt)
		}
		f, _ := QFormatOf(dt)
		got, err := ParseQFormat(f.Name)
		if err != nil || got != f {
			t.Errorf("ParseQFormat(%q) = %v, %v", f.Name, got, err)
		}
		if got, err := ParseQFormat(strings.ToUpper(string(dt))); err != nil || got != f {
			t.Errorf("ParseQFormat(%q) = %v, %v", strings.ToUpper(string(dt)), got, err)
		}
	}
	if f, err := ParseQFormat("fp8"); err != nil || f.DType != QTFP8E4M3 {
		t.Errorf("fp8 → %v, %v", f, err)
	}
	if _, err := ParseQFormat("q8_0"); err == nil {
		t.Error("q8_0 parsed as a QTensor format")
	}
	if IsQTensor(tensor.F32) {
		t.Error("f32 is not a QTensor")
	}
}

func TestQTensorGeometry(t *testing.T) {
	tests := []struct {
		dt         tensor.DType
		shape      []uint64
		s          QScaling
		codesShape []uint64
		codes      uint64
		scaleShape []uint64
	}{
		{QTInt8, []uint64{3, 5}, QScaling{}, []uint64{3, 5}, 15, []uint64{}},
		{QTInt8, []uint64{3, 5}, QScaling{PerAxis: true, Axis: 0}, []uint64{3, 5}, 15, []uint64{3, 1}},
		{QTInt8, []uint64{3, 5}, QScaling{PerAxis: true, Axis: -1}, []uint64{3, 5}, 15, []uint64{1, 5}},
		{QTInt4, []uint64{3, 5}, QScaling{Block: 2}, []uint64{3, 3}, 9, []uint64{3, 3}},
		{QTInt4, []uint64{2, 4, 6}, QScaling{PerAxis: true, Axis: 1}, []uint64{2, 4, 3}, 24, []uint64{1, 4, 1}},
		{QTFP6, []uint64{2, 5}, QScaling{}, []uint64{2, 4}, 8, []uint64{}},
		{QTFP6, []uint64{4}, QScaling{Block: 4}, []uint64{3}, 3, []uint64{1}},
		{QTFP4, []uint64{7}, QScaling{Block: 32}, []uint64{4}, 4, []uint64{1}},
		{QTFP4, []uint64{}, QScaling{}, []uint64{1}, 1, []uint64{}},
		{QTInt8, []uint64{}, QScaling{}, []uint64{}, 1, []uint64{}},
		{QTFP8E4M3, []uint64{2, 3}, QScaling{Block: 3}, []uint64{2, 3}, 6, []uint64{2, 1}},
		{QTFP8E5M2, []uint64{2, 3}, QScaling{}, []uint64{2, 3}, 6, []uint64{}},
		{QTBF16, []uint64{2, 3}, QScaling{PerAxis: true}, []uint64{2, 3}, 12, []uint64{2, 1}},
		{QTInt8, []uint64{0, 4}, QScaling{PerAxis: true, Axis: 1}, []uint64{0, 4}, 0, []uint64{1, 4}},
	}
	for _, tc := range tests {
		q, err := NewQTensor(tc.dt, tc.shape, tc.s)
		if err != nil {
			t.Errorf("%s %v %+v: %v", tc.dt, tc.shape, tc.s, err)
			continue
		}
		scales, _ := tensor.ElementCount(tc.scaleShape)
		if !reflect.DeepEqual(q.CodesShape(), tc.codesShape) || q.CodesSize() != tc.codes ||
			!reflect.DeepEqual(q.ScaleShape(), tc.scaleShape) || q.ScaleCount() != scales || q.Size() != tc.codes+4*scales {
			t.Errorf("%s %v %+v: codes %v (%d bytes), scales %v (%d), size %d; want codes %v (%d), scales %v",
				tc.dt, tc.shape, tc.s, q.CodesShape(), q.CodesSize(), q.ScaleShape(), q.ScaleCount(), q.Size(),
				tc.codesShape, tc.codes, tc.scaleShape)
		}
		// The codes shape times the code dtype's element size is the codes size.
		if n, err := q.Format().CodeDType.ShapeByteSize(q.CodesShape()); err != nil || n != q.CodesSize() {
			t.Errorf("%s %v: codes shape holds %d bytes of %s, codes size %d", tc.dt, tc.shape, n, q.Format().CodeDType, q.CodesSize())
		}
		// Through TensorInfo attributes and back.
		var info tensor.TensorInfo
		info.Name = "w"
		q.SetAttrs(&info)
		back, err := QTensorOf(&info)
		if err != nil || !reflect.DeepEqual(back, q) {
			t.Errorf("%s %v %+v: through attrs %v → %+v, %v", tc.dt, tc.shape, tc.s, info.Attrs, back, err)
		}
		if n, err := QTensorSize(&info); err != nil || n != q.Size() || CheckQTensor(&info) != nil {
			t.Errorf("QTensorSize = %d, %v; want %d", n, err, q.Size())
		}
	}
}

func TestQTensorBadGeometry(t *testing.T) {
	bad := []struct {
		dt    tensor.DType
		shape []uint64
		attrs map[string]string
		want  string
	}{
		{tensor.F32, []uint64{4}, nil, "not a QTensor dtype"},
		{QTInt8, []uint64{4}, map[string]string{AttrQAxis: "0", AttrQBlock: "2"}, "exclude each other"},
		{QTInt8, []uint64{4}, map[string]string{AttrQAxis: "1"}, "out of range"},
		{QTInt8, []uint64{4}, map[string]string{AttrQAxis: "-1"}, "not an axis number"},
		{QTInt8, []uint64{4}, map[string]string{AttrQAxis: "00"}, "not an axis number"},
		{QTInt8, []uint64{4}, map[string]string{AttrQBlock: "0"}, "not a positive block size"},
		{QTInt8, []uint64{4}, map[string]string{AttrQBlock: "+4"}, "not a positive block size"},
		{QTInt8, []uint64{}, map[string]string{AttrQBlock: "4"}, "scalar"},
		{QTInt4, []uint64{1 << 62, 1 << 3}, nil, "overflows"},
		{QTBF16, []uint64{1 << 40, 1 << 30}, nil, "overflows"},
	}
	for _, tc := range bad {
		info := tensor.TensorInfo{Name: "w", DType: tc.dt, Shape: tc.shape, Attrs: tc.attrs}
		_, err := QTensorOf(&info)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v %v: error %v, want %q", tc.dt, tc.shape, tc.attrs, err, tc.want)
		}
	}
	info := tensor.TensorInfo{Name: "w", DType: QTInt8, Shape: []uint64{4}, Size: 7}
	if err := CheckQTensor(&info); err == nil {
		t.Error("CheckQTensor accepts a wrong size")
	}
}

// TestQTensorKnownBytes checks encodings worked out by hand from the rules in
// docs/formats/apsim.md.
func TestQTensorKnownBytes(t *testing.T) {
	f32 := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name  string
		dt    tensor.DType
		shape []uint64
		s     QScaling
		in    []float32
		want  []byte
	}{
		// amax 7 → scale 1; 3.5 rounds to even 4, 2.5 to 2; nibbles low first.
		{"int4", QTInt4, []uint64{5}, QScaling{}, []float32{1, -2, 3.5, 7, 2.5},
			cat(f32(1), []byte{0xe1, 0x74, 0x02})},
		// amax 254 → scale 2; −1 → −0.5 → 0 (even), 3 → 1.5 → 2, −254 → −127.
		{"int8", QTInt8, []uint64{4}, QScaling{}, []float32{-1, 3, -254, 0},
			cat(f32(2), []byte{0x00, 0x02, 0x81, 0x00})},
		// Per row (axis 0): row 0 amax 12.7 → scale 0.1f; row 1 all zero → scale 0.
		{"int8 axis", QTInt8, []uint64{2, 2}, QScaling{PerAxis: true, Axis: 0}, []float32{12.7, -6.3, 0, 0},
			cat(f32(float32(12.7)/127, 0), []byte{0x7f, 0xc1, 0x00, 0x00})},
		// fp4 e2m1 values 0 .5 1 1.5 2 3 4 6; amax 12 → scale 2: 12→6 (0x7),
		// −1→−0.5 (0x9), 5→2.5 → tie between 2 (0x4) and 3 (0x5): even 0x4.
		{"fp4", QTFP4, []uint64{3}, QScaling{}, []float32{12, -1, 5},
			cat(f32(2), []byte{0x97, 0x04})},
		// fp6 e3m2: 28 = 0x1f (max), 1 = 0x0c, −0.25 = 0x24 (exp 1, man 0:
		// 2^-2), 0.0625 = 0x01 (smallest subnormal). Bits: code i at 6i.
		{"fp6", QTFP6, []uint64{4}, QScaling{}, []float32{28, 1, -0.25, 0.0625},
			cat(f32(1), packBits(6, 0x1f, 0x0c, 0x24, 0x01))},
		// Blocks of 2 along rows: [1 2 | 3] [0 0 | −4] with fp8 e4m3, max 448.
		{"fp8 block", QTFP8E4M3, []uint64{2, 3}, QScaling{Block: 2}, []float32{1, 2, 3, 0, 0, -4},
			cat(f32(2.0/448, 3.0/448, 0, 4.0/448),
				[]byte{Float32ToE4M3Sat(1 / (2.0 / 448)), 0x7e, 0x7e, 0, 0, 0xfe})},
		{"bf16", QTBF16, []uint64{2}, QScaling{}, []float32{-2, 1},
			cat(f32(2), []byte{0x80, 0xbf, 0x00, 0x3f})},
	}
	for _, tc := range tests {
		q, err := NewQTensor(tc.dt, tc.shape, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.Encode(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: encoded % x, want % x", tc.name, got, tc.want)
		}
	}
}

// packBits packs codes of width w least significant bit first.
func packBits(w int, codes ...uint32) []byte {
	out := make([]byte, (len(codes)*w+7)/8)
	for i, c := range codes {
		for k := 0; k < w; k++ {
			if c>>k&1 != 0 {
				p := i*w + k
				out[p/8] |= 1 << (p % 8)
			}
		}
	}
	return out
}

// nearestCode finds by brute force the code of f nearest to v, ties to the
// code with an even last bit, saturating at the largest finite code.
func nearestCode(f *QFormat, v float32) uint32 {
	best, bestErr := uint32(0), math.Inf(1)
	for c := uint32(0); c < 1<<f.Bits; c++ {
		x := f.decode(c)
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || math.Abs(float64(x)) > float64(f.QMax) {
			continue
		}
		isInt := f.DType == QTInt8 || f.DType == QTInt4
		if !isInt && math.Signbit(float64(x)) != math.Signbit(float64(v)) {
			continue
		}
		e := math.Abs(float64(x) - float64(v))
		if e < bestErr || (e == bestErr && c&1 == 0) {
			best, bestErr = c, e
		}
	}
	return best
}

func TestMinifloatRoundsToNearestEven(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []tensor.DType{QTFP6, QTFP4, QTFP8E4M3, QTFP8E5M2, QTInt4, QTInt8} {
		f, _ := QFormatOf(dt)
		var vals []float32
		// Every code value, every midpoint between neighbours, and random values.
		for c := uint32(0); c < 1<<f.Bits; c++ {
			x := f.decode(c)
			if !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) {
				vals = append(vals, x, math.Nextafter32(x, 0), math.Nextafter32(x, float32(math.Inf(1))))
			}
		}
		n := len(vals)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if math.Signbit(float64(vals[i])) == math.Signbit(float64(vals[j])) && i%3 == 0 && j%3 == 0 {
					vals = append(vals, (vals[i]+vals[j])/2)
				}
			}
		}
		for range 5000 {
			vals = append(vals, float32(rng.NormFloat64())*f.QMax/2, float32(rng.NormFloat64())*f.QMax*2)
		}
		for _, v := range vals {
			want := nearestCode(f, v)
			got := f.encode(v)
			if dt == QTInt8 || dt == QTInt4 {
				// Integers: compare values (two codes never share one).
				if f.decode(got) != f.decode(want) && !(v == 0) {
					t.Errorf("%s: %v → %v, want %v", dt, v, f.decode(got), f.decode(want))
				}
				continue
			}
			if got != want {
				t.Errorf("%s: %v (%#x) → code %#x (%v), want %#x (%v)", dt, v, math.Float32bits(v), got, f.decode(got), want, f.decode(want))
			}
		}
	}
}

func TestMinifloatTables(t *testing.T) {
	fp6, _ := QFormatOf(QTFP6)
	fp4, _ := QFormatOf(QTFP4)
	if fp6.QMax != 28 || fp4.QMax != 6 {
		t.Fatalf("fp6 max %v, fp4 max %v; want 28 and 6", fp6.QMax, fp4.QMax)
	}
	want4 := []float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	for c, w := range want4 {
		if fp4.decode(uint32(c)) != w || fp4.decode(uint32(c|8)) != -w {
			t.Errorf("fp4 code %#x = %v, want ±%v", c, fp4.decode(uint32(c)), w)
		}
	}
	// e3m2: smallest subnormal 2^-4, smallest normal 2^-2.
	if fp6.decode(1) != 0.0625 || fp6.decode(4) != 0.25 || fp6.decode(0x1f) != 28 {
		t.Errorf("fp6 codes 1, 4, 0x1f = %v %v %v", fp6.decode(1), fp6.decode(4), fp6.decode(0x1f))
	}
}

// errorBound returns the largest error the documented rules allow for x in
// a group with scale s: half a code step at x's magnitude, times s, plus the
// float32 rounding of the division and of the product.
func errorBound(f *QFormat, x, s float32) float64 {
	ax := math.Abs(float64(x))
	var step float64
	switch f.DType {
	case QTInt8, QTInt4:
		step = 1
	default:
		// Spacing of codes around v = x/s, at least the subnormal spacing.
		v := ax / float64(s)
		mbits := map[tensor.DType]int{QTFP8E4M3: 3, QTFP8E5M2: 2, QTFP6: 2, QTFP4: 1, QTBF16: 7}[f.DType]
		minNormal := map[tensor.DType]float64{QTFP8E4M3: 0x1p-6, QTFP8E5M2: 0x1p-14, QTFP6: 0x1p-2, QTFP4: 1, QTBF16: 0x1p-126}[f.DType]
		_, e := math.Frexp(math.Max(v, minNormal))
		step = math.Ldexp(1, e-1-mbits)
	}
	return step/2*float64(s) + ax*0x1p-22
}

func TestQTensorRoundTripWithinBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shape := []uint64{6, 37}
	src := make([]float32, 6*37)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * math.Pow(10, float64(i%7-3)))
	}
	src[5] = 0
	src[6] = float32(math.Copysign(0, -1))
	for _, dt := range QTensorDTypes() {
		for _, s := range []QScaling{{}, {PerAxis: true, Axis: 0}, {PerAxis: true, Axis: 1}, {Block: 8}, {Block: 37}} {
			q, err := NewQTensor(dt, shape, s)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := q.Encode(src)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := q.Encode(src)
			if !bytes.Equal(enc, again) {
				t.Fatalf("%s %+v: encoding is not deterministic", dt, s)
			}
			dec := make([]float32, len(src))
			if err := q.Decode(dec, enc); err != nil {
				t.Fatal(err)
			}
			idx := q.scaleIndex()
			for i, x := range src {
				r, c := uint64(i)/37, uint64(i)%37
				sc := math.Float32frombits(binary.LittleEndian.Uint32(enc[4*idx(r, c):]))
				if d := math.Abs(float64(dec[i]) - float64(x)); d > errorBound(q.Format(), x, sc) {
					t.Errorf("%s %+v: element %d: %v decodes to %v (error %g, bound %g, scale %g)", dt, s, i, x, dec[i], d, errorBound(q.Format(), x, sc), sc)
					break
				}
			}
		}
	}
}

func TestQTensorScalesFollowTheAxis(t *testing.T) {
	// [2,3,4] per axis 1: slice j holds values up to j+1.
	shape := []uint64{2, 3, 4}
	src := make([]float32, 24)
	for i := range src {
		j := i / 4 % 3
		src[i] = float32(j+1) * float32(i%4+1) / 4
	}
	q, _ := NewQTensor(QTInt8, shape, QScaling{PerAxis: true, Axis: 1})
	enc, err := q.Encode(src)
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 3; j++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(enc[4*j:]))
		if want := float32(j+1) / 127; got != want {
			t.Errorf("scale %d = %v, want %v", j, got, want)
		}
	}
	// Every element is its slice's scale times a whole code, and the
	// largest of each slice is code 127.
	for i := range src {
		if i%4 == 3 && int8(enc[12+i]) != 127 {
			t.Errorf("element %d: code %d, want 127", i, int8(enc[12+i]))
		}
	}
}

func TestQTensorRefusesNonFinite(t *testing.T) {
	q, _ := NewQTensor(QTInt8, []uint64{3}, QScaling{})
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
		if _, err := q.Encode([]float32{1, bad, 2}); err == nil || !strings.Contains(err.Error(), "element 1") {
			t.Errorf("encode of %v: %v", bad, err)
		}
	}
	if _, err := q.Encode([]float32{1}); err == nil {
		t.Error("encode of a short slice succeeds")
	}
	if err := q.Decode(make([]float32, 3), make([]byte, 6)); err == nil {
		t.Error("decode of a short buffer succeeds")
	}
}

func TestQTensorTinyScale(t *testing.T) {
	tiny := math.Float32frombits(3) // amax/127 underflows to zero
	q, _ := NewQTensor(QTInt8, []uint64{2}, QScaling{})
	enc, err := q.Encode([]float32{tiny, -tiny})
	if err != nil {
		t.Fatal(err)
	}
	if s := binary.LittleEndian.Uint32(enc); s != 1 {
		t.Errorf("scale bits %#x, want 1 (the smallest float32)", s)
	}
	if int8(enc[4]) != 3 || int8(enc[5]) != -3 {
		t.Errorf("codes %d %d, want 3 −3", int8(enc[4]), int8(enc[5]))
	}
}

func TestDecodeQTensorAnyBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range QTensorDTypes() {
		info := tensor.TensorInfo{Name: "w", DType: dt, Shape: []uint64{3, 5}, Attrs: map[string]string{AttrQBlock: "2"}}
		n, err := QTensorSize(&info)
		if err != nil {
			t.Fatal(err)
		}
		src := make([]byte, n)
		for range 50 {
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			// Any bytes decode, but for a NaN or infinite scale, which
			// is refused (a damaged file).
			var se *ScaleError
			if err := DecodeQTensor(&info, make([]float32, 15), src); err != nil && !errors.As(err, &se) {
				t.Fatal(err)
			}
		}
		if err := EncodeQTensor(&info, make([]byte, n), make([]float32, 15)); err != nil {
			t.Fatal(err)
		}
	}
}

// scaleIndex, the test's own reading of the scale layout: it maps a (row,
// column) position to its scale's index.
func (q *QTensor) scaleIndex() func(r, c uint64) uint64 {
	switch {
	case q.axis >= 0:
		// stride of the axis in elements, and its length
		stride := uint64(1)
		for _, d := range q.shape[q.axis+1:] {
			stride *= d
		}
		n := q.shape[q.axis]
		rowLen := q.rowLen
		if q.axis == len(q.shape)-1 {
			return func(_, c uint64) uint64 { return c }
		}
		return func(r, c uint64) uint64 { return (r*rowLen + c) / stride % n }
	case q.block != 0:
		nb := q.scaleShape[len(q.scaleShape)-1]
		b := q.block
		return func(r, c uint64) uint64 { return r*nb + c/b }
	}
	return func(_, _ uint64) uint64 { return 0 }
}

func BenchmarkQTensorEncodeInt8Rows(b *testing.B) {
	q, _ := NewQTensor(QTInt8, []uint64{256, 1024}, QScaling{PerAxis: true, Axis: 0})
	src := make([]float32, 256*1024)
	for i := range src {
		src[i] = float32(i%977) - 488
	}
	dst := make([]byte, q.Size())
	b.SetBytes(int64(4 * len(src)))
	for b.Loop() {
		if err := q.EncodeInto(dst, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQTensorDecodeInt4Blocks(b *testing.B) {
	q, _ := NewQTensor(QTInt4, []uint64{256, 1024}, QScaling{Block: 32})
	src := make([]float32, 256*1024)
	for i := range src {
		src[i] = float32(i%977) - 488
	}
	enc, _ := q.Encode(src)
	b.SetBytes(int64(4 * len(src)))
	for b.Loop() {
		if err := q.Decode(src, enc); err != nil {
			b.Fatal(err)
		}
	}
}
