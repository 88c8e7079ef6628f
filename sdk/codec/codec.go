// Package codec converts tensor bytes between number formats: IEEE-style
// floats (f64, f32, f16, bf16, f8_e4m3, f8_e5m2), integers and bool, and the
// ggml block-quantized types (q8_0, q4_0 … q6_K, tq1_0, tq2_0, mxfp4,
// iq4_nl, iq4_xs).
//
// Every conversion goes through float32: DecodeFloat32 turns the bytes of any
// supported dtype into float32 values (dequantizing block types), and
// EncodeFloat32 turns float32 values into any supported dtype (quantizing
// block types). Convert chains the two, with direct kernels for the common
// float casts, and ConvertRows spreads a Convert over several goroutines.
//
// The ggml quantizers and dequantizers are byte-identical to ggml's reference
// code (ggml_quantize_chunk without an importance matrix, built for baseline
// x86-64 without fused multiply-add) on every platform: every float32 product
// is rounded explicitly, sums run in float32 in index order, and float to
// integer conversions of non-finite values reproduce what that build does.
// docs/codecs.md lists the byte layout, rounding rule and error bound of every
// format.
//
// The package is safe for concurrent use. Conversions do not allocate on the
// hot path; scratch buffers are pooled.
package codec

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// format describes how one dtype converts to and from float32.
type format struct {
	blockSize  int // elements per block (1 for element types)
	blockBytes int // bytes per block
	// decode converts whole blocks: len(dst) is a multiple of blockSize and
	// len(src) holds exactly len(dst)/blockSize blocks. It must not panic on
	// any byte pattern.
	decode func(dst []float32, src []byte)
	// encode converts whole blocks: len(src) is a multiple of blockSize and
	// len(dst) holds exactly len(src)/blockSize blocks. nil when the dtype
	// can only be decoded.
	encode func(dst []byte, src []float32)
}

// formats maps every supported dtype to its codec. It is filled by the init
// functions of this package's files and read-only afterwards.
var formats = map[tensor.DType]*format{}

// register adds the codec of dt. It checks the geometry against the dtype
// registry so the two can never disagree.
func register(dt tensor.DType, f *format) {
	info, ok := dt.Info()
	if !ok {
		panic("codec: register of unknown dtype " + string(dt))
	}
	if uint64(f.blockSize) != info.BlockSize || uint64(f.blockBytes) != info.BlockBytes {
		panic(fmt.Sprintf("codec: %s geometry %d/%d disagrees with the dtype registry %d/%d",
			dt, f.blockSize, f.blockBytes, info.BlockSize, info.BlockBytes))
	}
	if _, dup := formats[dt]; dup {
		panic("codec: dtype registered twice: " + string(dt))
	}
	formats[dt] = f
}

// UnsupportedError reports a dtype that this package cannot decode or encode.
// Callers add the tensor name.
type UnsupportedError struct {
	DType tensor.DType
	Op    string // "decode" or "encode"
}

func (e *UnsupportedError) Error() string {
	if !e.DType.Known() {
		return fmt.Sprintf("codec: cannot %s unknown dtype %q", e.Op, string(e.DType))
	}
	return fmt.Sprintf("codec: cannot %s dtype %s: not supported", e.Op, e.DType)
}

// CanDecode reports whether DecodeFloat32 supports dt.
func CanDecode(dt tensor.DType) bool {
	f := formats[dt]
	return f != nil && f.decode != nil
}

// CanEncode reports whether EncodeFloat32 supports dt.
func CanEncode(dt tensor.DType) bool {
	f := formats[dt]
	return f != nil && f.encode != nil
}

// BlockSize returns the number of elements in one block of dt (1 for element
// types) and whether the package supports dt at all.
func BlockSize(dt tensor.DType) (int, bool) {
	f := formats[dt]
	if f == nil {
		return 0, false
	}
	return f.blockSize, true
}

func decoder(dt tensor.DType) (*format, error) {
	f := formats[dt]
	if f == nil || f.decode == nil {
		return nil, &UnsupportedError{DType: dt, Op: "decode"}
	}
	return f, nil
}

func encoder(dt tensor.DType) (*format, error) {
	f := formats[dt]
	if f == nil || f.encode == nil {
		return nil, &UnsupportedError{DType: dt, Op: "encode"}
	}
	return f, nil
}

// byteSize returns the bytes n elements of f occupy, or an error when n is
// not a whole number of blocks.
func (f *format) byteSize(dt tensor.DType, n int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("codec: negative element count %d", n)
	}
	if n%f.blockSize != 0 {
		return 0, fmt.Errorf("codec: %d elements is not a whole number of %s blocks of %d", n, dt, f.blockSize)
	}
	return n / f.blockSize * f.blockBytes, nil
}

// DecodeFloat32 converts len(dst) elements of dt in src to float32
// (dequantizes block types). len(dst) must be a whole number of blocks and
// src must hold exactly their bytes.
func DecodeFloat32(dt tensor.DType, dst []float32, src []byte) error {
	f, err := decoder(dt)
	if err != nil {
		return err
	}
	need, err := f.byteSize(dt, len(dst))
	if err != nil {
		return err
	}
	if len(src) != need {
		return fmt.Errorf("codec: decode %s: %d elements need %d bytes, got %d", dt, len(dst), need, len(src))
	}
	f.decode(dst, src)
	return nil
}

// EncodeFloat32 converts src to dt into dst (quantizes block types).
// len(src) must be a whole number of blocks and len(dst) must equal dt's byte
// size for len(src) elements.
func EncodeFloat32(dt tensor.DType, dst []byte, src []float32) error {
	f, err := encoder(dt)
	if err != nil {
		return err
	}
	need, err := f.byteSize(dt, len(src))
	if err != nil {
		return err
	}
	if len(dst) != need {
		return fmt.Errorf("codec: encode %s: %d elements need %d bytes, got %d", dt, len(src), need, len(dst))
	}
	f.encode(dst, src)
	return nil
}

// chunkElems is the number of elements converted per step through the
// float32 scratch buffer. It is a multiple of every block size.
const chunkElems = 4096

var scratchPool = sync.Pool{New: func() any { return new([chunkElems]float32) }}

// Convert converts n elements of dtype from in src to dtype to in dst. Direct
// kernels handle the common float casts (bf16→f32, f16→f32, f32→f16,
// f32→bf16, bf16→f16 …); everything else goes through float32 in chunks of
// 4096 elements. The result always equals EncodeFloat32(to,
// DecodeFloat32(from, src)). n must be a whole number of blocks of both
// types, and src and dst must hold exactly n elements.
func Convert(from, to tensor.DType, dst, src []byte, n int) error {
	ff, err := decoder(from)
	if err != nil {
		return err
	}
	tf, err := encoder(to)
	if err != nil {
		return err
	}
	srcBytes, err := ff.byteSize(from, n)
	if err != nil {
		return err
	}
	dstBytes, err := tf.byteSize(to, n)
	if err != nil {
		return err
	}
	if len(src) != srcBytes {
		return fmt.Errorf("codec: convert %s→%s: %d elements of %s need %d bytes, got %d", from, to, n, from, srcBytes, len(src))
	}
	if len(dst) != dstBytes {
		return fmt.Errorf("codec: convert %s→%s: %d elements of %s need %d bytes, got %d", from, to, n, to, dstBytes, len(dst))
	}
	convert(from, to, ff, tf, dst, src, n)
	return nil
}

// convert does the work of Convert on validated arguments.
func convert(from, to tensor.DType, ff, tf *format, dst, src []byte, n int) {
	if n == 0 {
		return
	}
	if k := directKernel(from, to); k != nil {
		k(dst, src, n)
		return
	}
	// General path through float32.
	if from == tensor.F32 {
		if v, ok := f32View(src); ok {
			tf.encode(dst, v)
			return
		}
	}
	if to == tensor.F32 {
		if v, ok := f32View(dst); ok {
			ff.decode(v, src)
			return
		}
	}
	buf := scratchPool.Get().(*[chunkElems]float32)
	defer scratchPool.Put(buf)
	for done := 0; done < n; {
		m := n - done
		if m > chunkElems {
			m = chunkElems
		}
		s := src[done/ff.blockSize*ff.blockBytes : (done+m)/ff.blockSize*ff.blockBytes]
		d := dst[done/tf.blockSize*tf.blockBytes : (done+m)/tf.blockSize*tf.blockBytes]
		ff.decode(buf[:m], s)
		tf.encode(d, buf[:m])
		done += m
	}
}

// minParallelElems is the least number of elements worth handing to a
// goroutine of its own.
const minParallelElems = 1 << 14

// ConvertRows does Convert on whole rows of rowLen elements, split across
// workers goroutines (workers ≤ 0 means GOMAXPROCS). rowLen must be a whole
// number of blocks of both types; src must hold a whole number of rows and dst
// exactly the converted rows. The output is identical to the serial call:
// blocks never interact, so the elements are split into equal contiguous
// ranges on block boundaries (a range may end inside a row), at least 16 Ki
// elements each.
func ConvertRows(from, to tensor.DType, dst, src []byte, rowLen, workers int) error {
	ff, err := decoder(from)
	if err != nil {
		return err
	}
	tf, err := encoder(to)
	if err != nil {
		return err
	}
	if rowLen <= 0 {
		return fmt.Errorf("codec: convert rows %s→%s: row length %d must be positive", from, to, rowLen)
	}
	srcRow, err := ff.byteSize(from, rowLen)
	if err != nil {
		return fmt.Errorf("codec: convert rows %s→%s: row length: %w", from, to, err)
	}
	dstRow, err := tf.byteSize(to, rowLen)
	if err != nil {
		return fmt.Errorf("codec: convert rows %s→%s: row length: %w", from, to, err)
	}
	if len(src)%srcRow != 0 {
		return fmt.Errorf("codec: convert rows %s→%s: %d source bytes is not a whole number of %d-byte rows", from, to, len(src), srcRow)
	}
	rows := len(src) / srcRow
	if len(dst) != rows*dstRow {
		return fmt.Errorf("codec: convert rows %s→%s: %d rows need %d destination bytes, got %d", from, to, rows, rows*dstRow, len(dst))
	}
	n := rows * rowLen
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Split on multiples of unit elements, a whole number of blocks of both.
	unit := lcm(ff.blockSize, tf.blockSize)
	units := n / unit
	if max := n / minParallelElems; workers > max {
		workers = max
	}
	if workers > units {
		workers = units
	}
	if workers <= 1 {
		convert(from, to, ff, tf, dst, src, n)
		return nil
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo := units * w / workers * unit
		hi := units * (w + 1) / workers * unit
		s := src[lo/ff.blockSize*ff.blockBytes : hi/ff.blockSize*ff.blockBytes]
		d := dst[lo/tf.blockSize*tf.blockBytes : hi/tf.blockSize*tf.blockBytes]
		wg.Add(1)
		go func() {
			defer wg.Done()
			convert(from, to, ff, tf, d, s, hi-lo)
		}()
	}
	wg.Wait()
	return nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }
