package tensor

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
)

// DType names the encoding of a tensor's bytes by its registry name: "f32",
// "bf16", "q8_0", "q4_K". Names of ggml block types are ggml's own.
type DType string

// Element types.
const (
	F64    DType = "f64"
	F32    DType = "f32"
	F16    DType = "f16"
	BF16   DType = "bf16"
	F8E4M3 DType = "f8_e4m3"
	F8E5M2 DType = "f8_e5m2"
	I64    DType = "i64"
	I32    DType = "i32"
	I16    DType = "i16"
	I8     DType = "i8"
	U64    DType = "u64"
	U32    DType = "u32"
	U16    DType = "u16"
	U8     DType = "u8"
	Bool   DType = "bool"
)

// ggml block-quantized types, by ggml's names.
const (
	Q4_0   DType = "q4_0"
	Q4_1   DType = "q4_1"
	Q5_0   DType = "q5_0"
	Q5_1   DType = "q5_1"
	Q8_0   DType = "q8_0"
	Q8_1   DType = "q8_1"
	Q2_K   DType = "q2_K"
	Q3_K   DType = "q3_K"
	Q4_K   DType = "q4_K"
	Q5_K   DType = "q5_K"
	Q6_K   DType = "q6_K"
	Q8_K   DType = "q8_K"
	IQ2XXS DType = "iq2_xxs"
	IQ2XS  DType = "iq2_xs"
	IQ3XXS DType = "iq3_xxs"
	IQ1S   DType = "iq1_s"
	IQ4NL  DType = "iq4_nl"
	IQ3S   DType = "iq3_s"
	IQ2S   DType = "iq2_s"
	IQ4XS  DType = "iq4_xs"
	IQ1M   DType = "iq1_m"
	TQ1_0  DType = "tq1_0"
	TQ2_0  DType = "tq2_0"
	MXFP4  DType = "mxfp4"
	NVFP4  DType = "nvfp4"
	Q1_0   DType = "q1_0"
	Q2_0   DType = "q2_0"
)

// Kind groups dtypes by what their bytes hold.
type Kind uint8

// Kinds of dtype.
const (
	KindFloat   Kind = iota + 1 // IEEE-style floating point elements
	KindInt                     // signed two's-complement integers
	KindUint                    // unsigned integers
	KindBool                    // one byte per element, 0 or 1
	KindBlock                   // ggml block quantization: fixed bytes per block of elements
	KindQTensor                 // compressed tensor with scales (apsim QTensor); size depends on its parameters
)

func (k Kind) String() string {
	switch k {
	case KindFloat:
		return "float"
	case KindInt:
		return "int"
	case KindUint:
		return "uint"
	case KindBool:
		return "bool"
	case KindBlock:
		return "block"
	case KindQTensor:
		return "qtensor"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// NoGGML marks a dtype that has no ggml type id.
const NoGGML = -1

// Info is the registry entry of one dtype.
type Info struct {
	Name DType
	Kind Kind
	// BlockSize is the number of elements in one block: 1 for element types.
	// Zero for KindQTensor, whose size depends on its parameters.
	BlockSize uint64
	// BlockBytes is the number of bytes one block occupies.
	BlockBytes uint64
	// GGML is ggml's type id, or NoGGML.
	GGML int
	// Safetensors is the safetensors dtype string ("F32", "BF16"), or "".
	Safetensors string
	// NeedsImatrix reports whether ggml refuses to quantize to this type
	// without an importance matrix.
	NeedsImatrix bool
}

// IsFloat reports whether the type holds floating-point elements.
func (i Info) IsFloat() bool { return i.Kind == KindFloat }

// IsInteger reports whether the type holds integer or bool elements.
func (i Info) IsInteger() bool {
	return i.Kind == KindInt || i.Kind == KindUint || i.Kind == KindBool
}

// IsQuantized reports whether the type is a block or QTensor encoding.
func (i Info) IsQuantized() bool { return i.Kind == KindBlock || i.Kind == KindQTensor }

var registry = map[DType]Info{}

// byGGML maps a ggml type id to its dtype.
var byGGML = map[int]DType{}

// bySafetensors maps a safetensors dtype string to its dtype.
var bySafetensors = map[string]DType{}

// removedGGML lists ggml type ids that ggml has removed; they have no geometry.
var removedGGML = map[int]string{
	4: "q4_2 (removed)", 5: "q4_3 (removed)",
	31: "q4_0_4_4 (removed)", 32: "q4_0_4_8 (removed)", 33: "q4_0_8_8 (removed)",
	36: "iq4_nl_4_4 (removed)", 37: "iq4_nl_4_8 (removed)", 38: "iq4_nl_8_8 (removed)",
}

// GGMLTypeCount is the number of ggml type ids (GGML_TYPE_COUNT).
const GGMLTypeCount = 43

func init() {
	elem := func(name DType, kind Kind, size uint64, ggml int, st string) {
		register(Info{Name: name, Kind: kind, BlockSize: 1, BlockBytes: size, GGML: ggml, Safetensors: st})
	}
	elem(F64, KindFloat, 8, 28, "F64")
	elem(F32, KindFloat, 4, 0, "F32")
	elem(F16, KindFloat, 2, 1, "F16")
	elem(BF16, KindFloat, 2, 30, "BF16")
	elem(F8E4M3, KindFloat, 1, NoGGML, "F8_E4M3")
	elem(F8E5M2, KindFloat, 1, NoGGML, "F8_E5M2")
	elem(I64, KindInt, 8, 27, "I64")
	elem(I32, KindInt, 4, 26, "I32")
	elem(I16, KindInt, 2, 25, "I16")
	elem(I8, KindInt, 1, 24, "I8")
	elem(U64, KindUint, 8, NoGGML, "U64")
	elem(U32, KindUint, 4, NoGGML, "U32")
	elem(U16, KindUint, 2, NoGGML, "U16")
	elem(U8, KindUint, 1, NoGGML, "U8")
	elem(Bool, KindBool, 1, NoGGML, "BOOL")

	block := func(name DType, ggml int, blockSize, blockBytes uint64, imatrix bool) {
		register(Info{Name: name, Kind: KindBlock, BlockSize: blockSize, BlockBytes: blockBytes, GGML: ggml, NeedsImatrix: imatrix})
	}
	block(Q4_0, 2, 32, 18, false)
	block(Q4_1, 3, 32, 20, false)
	block(Q5_0, 6, 32, 22, false)
	block(Q5_1, 7, 32, 24, false)
	block(Q8_0, 8, 32, 34, false)
	block(Q8_1, 9, 32, 36, false)
	block(Q2_K, 10, 256, 84, false)
	block(Q3_K, 11, 256, 110, false)
	block(Q4_K, 12, 256, 144, false)
	block(Q5_K, 13, 256, 176, false)
	block(Q6_K, 14, 256, 210, false)
	block(Q8_K, 15, 256, 292, false)
	block(IQ2XXS, 16, 256, 66, true)
	block(IQ2XS, 17, 256, 74, true)
	block(IQ3XXS, 18, 256, 98, false)
	block(IQ1S, 19, 256, 50, true)
	block(IQ4NL, 20, 32, 18, false)
	block(IQ3S, 21, 256, 110, false)
	block(IQ2S, 22, 256, 82, false)
	block(IQ4XS, 23, 256, 136, false)
	block(IQ1M, 29, 256, 56, false)
	block(TQ1_0, 34, 256, 54, false)
	block(TQ2_0, 35, 256, 66, false)
	block(MXFP4, 39, 32, 17, false)
	block(NVFP4, 40, 64, 36, false)
	block(Q1_0, 41, 128, 18, false)
	block(Q2_0, 42, 64, 18, false)
}

func register(info Info) {
	if _, dup := registry[info.Name]; dup {
		panic("tensor: dtype registered twice: " + string(info.Name))
	}
	registry[info.Name] = info
	if info.GGML != NoGGML {
		byGGML[info.GGML] = info.Name
	}
	if info.Safetensors != "" {
		bySafetensors[info.Safetensors] = info.Name
	}
}

// RegisterQTensor adds a compressed-tensor dtype (KindQTensor) to the
// registry. It is meant for sdk/codec's package initialisation; it panics on a
// duplicate name or another kind.
func RegisterQTensor(info Info) {
	if info.Kind != KindQTensor {
		panic("tensor: RegisterQTensor needs KindQTensor: " + string(info.Name))
	}
	info.GGML = NoGGML
	register(info)
}

// Info returns the registry entry of d.
func (d DType) Info() (Info, bool) {
	info, ok := registry[d]
	return info, ok
}

// Known reports whether d is in the registry.
func (d DType) Known() bool {
	_, ok := registry[d]
	return ok
}

// String returns the registry name.
func (d DType) String() string { return string(d) }

// ParseDType finds a dtype by name. Case is ignored where it does not make two
// names collide ("Q8_0", "BF16", "q4_k" are accepted); safetensors spellings
// ("F8_E4M3") are accepted too.
func ParseDType(name string) (DType, error) {
	if _, ok := registry[DType(name)]; ok {
		return DType(name), nil
	}
	if d, ok := bySafetensors[name]; ok {
		return d, nil
	}
	for d := range registry {
		if strings.EqualFold(string(d), name) {
			return d, nil
		}
	}
	return "", fmt.Errorf("unknown dtype %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists every registered dtype name, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for d := range registry {
		names = append(names, string(d))
	}
	sort.Strings(names)
	return names
}

// FromGGML returns the dtype of a ggml type id. An id that ggml removed, or
// one past its table, returns an error that names it.
func FromGGML(id uint32) (DType, error) {
	if id > 1<<20 {
		return "", fmt.Errorf("ggml type id %d is out of range (0..%d)", id, GGMLTypeCount-1)
	}
	if d, ok := byGGML[int(id)]; ok {
		return d, nil
	}
	if name, ok := removedGGML[int(id)]; ok {
		return "", fmt.Errorf("ggml type id %d is %s and has no block geometry", id, name)
	}
	return "", fmt.Errorf("ggml type id %d is out of range (0..%d)", id, GGMLTypeCount-1)
}

// FromSafetensors returns the dtype of a safetensors dtype string ("BF16").
func FromSafetensors(s string) (DType, bool) {
	d, ok := bySafetensors[s]
	return d, ok
}

// ElementCount multiplies the dims of shape, reporting overflow of uint64.
// An empty shape is a scalar with one element.
func ElementCount(shape []uint64) (uint64, error) {
	n := uint64(1)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 {
			return 0, fmt.Errorf("shape %v: element count overflows 64 bits", shape)
		}
		n = lo
	}
	return n, nil
}

// ByteSize returns the number of bytes n elements of d occupy. For block
// types, n must be a whole number of blocks. QTensor dtypes have no fixed
// geometry and return an error; their size is computed by sdk/codec.
func (d DType) ByteSize(n uint64) (uint64, error) {
	info, ok := registry[d]
	if !ok {
		return 0, fmt.Errorf("unknown dtype %q", d)
	}
	return info.ByteSize(n)
}

// ShapeByteSize returns the bytes a tensor of d with the given row-major
// shape occupies. For block types the innermost dimension (the row) must be a
// multiple of the block size, as ggml requires.
func (d DType) ShapeByteSize(shape []uint64) (uint64, error) {
	info, ok := registry[d]
	if !ok {
		return 0, fmt.Errorf("unknown dtype %q", d)
	}
	return info.ShapeByteSize(shape)
}

// ByteSize is DType.ByteSize for the type i describes, without the registry
// lookup: a parser that has looked a dtype up once sizes each tensor of it
// with this.
func (i Info) ByteSize(n uint64) (uint64, error) {
	if i.Kind == KindQTensor || i.BlockSize == 0 {
		return 0, fmt.Errorf("dtype %s has no fixed geometry", i.Name)
	}
	if n%i.BlockSize != 0 {
		return 0, fmt.Errorf("%d elements is not a whole number of %s blocks of %d", n, i.Name, i.BlockSize)
	}
	hi, lo := bits.Mul64(n/i.BlockSize, i.BlockBytes)
	if hi != 0 {
		return 0, fmt.Errorf("%d elements of %s: byte size overflows 64 bits", n, i.Name)
	}
	return lo, nil
}

// ShapeByteSize is DType.ShapeByteSize for the type i describes, without
// the registry lookup.
func (i Info) ShapeByteSize(shape []uint64) (uint64, error) {
	if i.Kind == KindBlock && len(shape) > 0 && shape[len(shape)-1]%i.BlockSize != 0 {
		return 0, fmt.Errorf("row length %d is not a multiple of the %s block size %d", shape[len(shape)-1], i.Name, i.BlockSize)
	}
	n, err := ElementCount(shape)
	if err != nil {
		return 0, err
	}
	return i.ByteSize(n)
}
