package apr

import (
	"fmt"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// APR's own quantized dtypes, added to the sdk/tensor registry by this
// package (as KindQTensor: their byte size is not a whole number of blocks).
// Their encodings are EncodeQ4/DecodeQ4 and EncodeQ8/DecodeQ8.
const (
	// Q4 is aprender's "q4" (id 128, legacy 8): blocks of 32 elements, each
	// an f16 scale and 16 bytes of nibbles; ceil(n/32)·18 bytes.
	Q4 tensor.DType = "apr_q4"
	// Q8 is aprender's "q8" (id 129, legacy 9): one f32 scale for the whole
	// tensor, then one i8 per element; 4+n bytes (0 for an empty tensor).
	Q8 tensor.DType = "apr_q8"
)

func init() {
	for _, d := range []tensor.DType{Q4, Q8} {
		if !d.Known() {
			tensor.RegisterQTensor(tensor.Info{Name: d, Kind: tensor.KindQTensor})
		}
	}
}

// Dtype ids of the tensor index.
const (
	idF32   = 0
	idF16   = 1
	idQ4_0  = 2 // inference reader: ggml Q4_0; legacy aprender: BF16
	idF64   = 3 // aprender: F64; inference reader: ggml Q4_1
	idI32   = 4
	idI64   = 5
	idI8    = 6  // aprender: I8; inference reader: ggml Q5_0
	idU8    = 7  // aprender: U8; inference reader: ggml Q5_1
	idQ4Old = 8  // aprender: legacy q4; inference reader's own writer: ggml Q8_0
	idQ8Old = 9  // aprender: legacy q8; ggml Q8_1
	idQ2K   = 10 // inference reader only
	idQ3K   = 11 // inference reader only
	idQ4K   = 12
	idQ5K   = 13 // inference reader only
	idQ6K   = 14
	idIQ2XX = 16 // inference reader only
	idIQ2XS = 17 // inference reader only
	idBF16  = 30
	idQ4    = 128
	idQ8    = 129
)

// writeIDs are the only ids the writer uses: the ones both of aprender's
// readers decode the same way.
var writeIDs = map[tensor.DType]uint8{
	tensor.F32:  idF32,
	tensor.F16:  idF16,
	tensor.BF16: idBF16,
	tensor.Q4_K: idQ4K,
	tensor.Q6_K: idQ6K,
	Q4:          idQ4,
	Q8:          idQ8,
}

// Writable reports whether the writer stores d as it is.
func Writable(d tensor.DType) bool { _, ok := writeIDs[d]; return ok }

// Q4Size returns the bytes n elements occupy in Q4.
func Q4Size(n uint64) uint64 { return (n + 31) / 32 * 18 }

// Q8Size returns the bytes n elements occupy in Q8: 4+n, or 0 when n is 0.
func Q8Size(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return 4 + n
}

// dtypeSize returns the byte size of a tensor of d with the given shape, for
// any dtype this package reads (Q4 and Q8 included).
func dtypeSize(d tensor.DType, shape []uint64) (uint64, error) {
	n, err := tensor.ElementCount(shape)
	if err != nil {
		return 0, err
	}
	switch d {
	case Q4:
		if n > 1<<62 {
			return 0, fmt.Errorf("%d elements is too many", n)
		}
		return Q4Size(n), nil
	case Q8:
		if n > 1<<62 {
			return 0, fmt.Errorf("%d elements is too many", n)
		}
		return Q8Size(n), nil
	}
	return d.ShapeByteSize(shape)
}

// resolveDType maps an index dtype id to a dtype. sized says whether size
// is the tensor's real byte size (uncompressed); then the ids that aprender
// and its inference reader read differently are told apart by their size.
// With per-tensor compression the stored size says nothing, and aprender's
// own meaning is taken.
func resolveDType(id uint8, shape []uint64, size uint64, sized bool) (tensor.DType, error) {
	fits := func(d tensor.DType) bool {
		if !sized {
			return true
		}
		want, err := dtypeSize(d, shape)
		return err == nil && want == size
	}
	pick := func(candidates ...tensor.DType) (tensor.DType, error) {
		for _, d := range candidates {
			if fits(d) {
				return d, nil
			}
		}
		return "", sizeError(id, candidates, shape, size)
	}
	switch id {
	case idF32:
		return pick(tensor.F32)
	case idF16:
		return pick(tensor.F16)
	case idQ4_0:
		return pick(tensor.BF16, tensor.Q4_0)
	case idF64:
		return pick(tensor.F64, tensor.Q4_1)
	case idI32:
		return pick(tensor.I32)
	case idI64:
		return pick(tensor.I64)
	case idI8:
		return pick(tensor.I8, tensor.Q5_0)
	case idU8:
		return pick(tensor.U8, tensor.Q5_1)
	case idQ4Old:
		return pick(Q4, tensor.Q8_0)
	case idQ8Old:
		return pick(Q8, tensor.Q8_1)
	case idQ2K:
		return pick(tensor.Q2_K)
	case idQ3K:
		return pick(tensor.Q3_K)
	case idQ4K:
		return pick(tensor.Q4_K)
	case idQ5K:
		return pick(tensor.Q5_K)
	case idQ6K:
		return pick(tensor.Q6_K)
	case idIQ2XX:
		return pick(tensor.IQ2XXS)
	case idIQ2XS:
		return pick(tensor.IQ2XS)
	case idBF16:
		return pick(tensor.BF16)
	case idQ4:
		return pick(Q4)
	case idQ8:
		return pick(Q8)
	}
	return "", fmt.Errorf("dtype id %d is not one aprender defines (0, 1, 3-9, 12, 14, 30, 128, 129; its inference reader also knows 2, 10, 11, 13, 16, 17)", id)
}

func sizeError(id uint8, candidates []tensor.DType, shape []uint64, size uint64) error {
	msg := fmt.Sprintf("dtype id %d with shape %v: the index says %d bytes, but", id, shape, size)
	for i, d := range candidates {
		if i > 0 {
			msg += " and"
		}
		want, err := dtypeSize(d, shape)
		if err != nil {
			msg += fmt.Sprintf(" %s cannot have that shape (%v)", d, err)
			continue
		}
		msg += fmt.Sprintf(" %s needs %d", d, want)
	}
	if (id == idQ4K || id == idQ6K) && len(shape) > 0 {
		msg += "; row-padded k-quant tensors (rows not a multiple of 256) are not supported"
	}
	return fmt.Errorf("%s", msg)
}
