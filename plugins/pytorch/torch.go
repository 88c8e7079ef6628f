package pytorch

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/sluice-ml/sluice/plugins/pytorch/pickle"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// The globals torch.save emits for tensors and state dicts, and nothing else.
// Each maps to a Go value; none of them runs code.

// storageTypes maps torch's typed storage classes to the dtype of their
// elements. UntypedStorage holds bytes (torch.save uses it with
// _rebuild_tensor_v3 for dtypes that have no typed storage class).
var storageTypes = map[string]tensor.DType{
	"DoubleStorage":   tensor.F64,
	"FloatStorage":    tensor.F32,
	"HalfStorage":     tensor.F16,
	"BFloat16Storage": tensor.BF16,
	"LongStorage":     tensor.I64,
	"IntStorage":      tensor.I32,
	"ShortStorage":    tensor.I16,
	"CharStorage":     tensor.I8,
	"ByteStorage":     tensor.U8,
	"BoolStorage":     tensor.Bool,
	"UntypedStorage":  tensor.U8,
}

// torchDTypes maps torch dtype objects (pickled as globals such as
// torch.float16) to registry dtypes.
var torchDTypes = map[string]tensor.DType{
	"float64": tensor.F64, "double": tensor.F64,
	"float32": tensor.F32, "float": tensor.F32,
	"float16": tensor.F16, "half": tensor.F16,
	"bfloat16": tensor.BF16,
	"int64":    tensor.I64, "long": tensor.I64,
	"int32": tensor.I32, "int": tensor.I32,
	"int16": tensor.I16, "short": tensor.I16,
	"int8":          tensor.I8,
	"uint8":         tensor.U8,
	"uint16":        tensor.U16,
	"uint32":        tensor.U32,
	"uint64":        tensor.U64,
	"bool":          tensor.Bool,
	"float8_e4m3fn": tensor.F8E4M3,
	"float8_e5m2":   tensor.F8E5M2,
}

// Allowlist returns the fully qualified names of every global the
// unpickler accepts, sorted. Documentation and tests use it.
func Allowlist() []string {
	names := []string{
		"collections.OrderedDict",
		"torch._utils._rebuild_tensor_v2",
		"torch._utils._rebuild_tensor_v3",
		"torch._utils._rebuild_parameter",
		"torch._utils._rebuild_parameter_with_state",
		"torch._tensor._rebuild_from_type_v2",
		"torch.Tensor",
		"torch.nn.parameter.Parameter",
		"torch.Size",
		"_codecs.encode",
	}
	for n := range storageTypes {
		names = append(names, "torch."+n)
	}
	for n := range torchDTypes {
		names = append(names, "torch."+n)
	}
	sort.Strings(names)
	return names
}

// findGlobal is the unpickler's Find: the allowlist.
func findGlobal(module, name string) (pickle.Value, error) {
	switch module + "." + name {
	case "collections.OrderedDict":
		return orderedDictClass{}, nil
	case "torch._utils._rebuild_tensor_v2":
		return rebuildTensor{version: 2}, nil
	case "torch._utils._rebuild_tensor_v3":
		return rebuildTensor{version: 3}, nil
	case "torch._utils._rebuild_parameter":
		return rebuildParameter{withState: false}, nil
	case "torch._utils._rebuild_parameter_with_state":
		return rebuildParameter{withState: true}, nil
	case "torch._tensor._rebuild_from_type_v2":
		return rebuildFromType{}, nil
	case "torch.Tensor", "torch.nn.parameter.Parameter":
		return tensorClass{name: module + "." + name}, nil
	case "torch.Size":
		return sizeClass{}, nil
	case "_codecs.encode":
		return codecsEncode{}, nil
	}
	if module == "torch" {
		if d, ok := storageTypes[name]; ok {
			return storageClass{name: name, dtype: d, untyped: name == "UntypedStorage"}, nil
		}
		if d, ok := torchDTypes[name]; ok {
			return dtypeValue{name: name, dtype: d}, nil
		}
	}
	return nil, errors.New("not allowed; a checkpoint may only name the tensor, storage and state-dict types " +
		"torch.save writes (see docs/formats/pytorch.md), and loading this one could run code")
}

// orderedDictClass is collections.OrderedDict.
type orderedDictClass struct{}

func (orderedDictClass) PickleType() string { return "collections.OrderedDict" }

// Call builds an empty OrderedDict, or one from a list of pairs.
func (orderedDictClass) Call(args pickle.Tuple) (pickle.Value, error) {
	d := pickle.NewDict()
	d.Ordered = true
	if len(args) == 0 {
		return d, nil
	}
	if len(args) > 1 {
		return nil, fmt.Errorf("OrderedDict takes at most 1 argument, got %d", len(args))
	}
	var items []pickle.Value
	switch a := args[0].(type) {
	case *pickle.List:
		items = a.Items
	case pickle.Tuple:
		items = a
	default:
		return nil, fmt.Errorf("OrderedDict from a %s is not supported", pickle.TypeName(args[0]))
	}
	for i, it := range items {
		pair, ok := it.(pickle.Tuple)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("OrderedDict item %d is not a pair", i)
		}
		if err := d.Set(pair[0], pair[1]); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// storageClass is one of torch's storage classes; it appears in persistent ids.
type storageClass struct {
	name    string
	dtype   tensor.DType
	untyped bool
}

func (s storageClass) PickleType() string { return "torch." + s.name }

// dtypeValue is a torch dtype object such as torch.float16.
type dtypeValue struct {
	name  string
	dtype tensor.DType
}

func (d dtypeValue) PickleType() string { return "torch." + d.name }

// tensorClass is torch.Tensor or torch.nn.parameter.Parameter, as named by
// _rebuild_from_type_v2.
type tensorClass struct{ name string }

func (t tensorClass) PickleType() string { return t.name }

// sizeClass is torch.Size: it builds a tuple.
type sizeClass struct{}

func (sizeClass) PickleType() string { return "torch.Size" }

func (sizeClass) Call(args pickle.Tuple) (pickle.Value, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("torch.Size takes 1 argument, got %d", len(args))
	}
	switch a := args[0].(type) {
	case pickle.Tuple:
		return a, nil
	case *pickle.List:
		return pickle.Tuple(append([]pickle.Value(nil), a.Items...)), nil
	}
	return nil, fmt.Errorf("torch.Size of a %s", pickle.TypeName(args[0]))
}

// codecsEncode is _codecs.encode, which protocol 2 uses to pickle bytes:
// encode(str, "latin1").
type codecsEncode struct{}

func (codecsEncode) PickleType() string { return "_codecs.encode" }

func (codecsEncode) Call(args pickle.Tuple) (pickle.Value, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("_codecs.encode takes 2 arguments here, got %d", len(args))
	}
	s, ok1 := args[0].(string)
	enc, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("_codecs.encode needs two strings")
	}
	switch strings.ToLower(enc) {
	case "latin1", "latin-1", "iso-8859-1":
	default:
		return nil, fmt.Errorf("_codecs.encode with encoding %q is not supported (latin1 only)", enc)
	}
	out := make(pickle.Bytes, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, fmt.Errorf("_codecs.encode: character U+%04X is not latin1", r)
		}
		out = append(out, byte(r))
	}
	return out, nil
}

// storage is one storage a persistent id names: bytes in <prefix>/data/<key>.
type storage struct {
	key      string
	dtype    tensor.DType // element dtype of a typed storage; u8 for untyped
	untyped  bool
	nbytes   uint64
	location string
}

func (s *storage) PickleType() string { return "torch storage " + s.key }

// tensorRef is a tensor the pickle rebuilt: a strided view of a storage.
// Offset and strides count elements of dtype.
type tensorRef struct {
	storage *storage
	dtype   tensor.DType
	offset  uint64
	shape   []uint64
	stride  []uint64
}

func (t *tensorRef) PickleType() string { return "torch.Tensor" }

// SetState accepts the (ignored) Python attributes of a tensor.
func (t *tensorRef) SetState(pickle.Value) error { return nil }

// maxDims bounds a tensor's rank.
const maxDims = 64

// rebuildTensor is torch._utils._rebuild_tensor_v2 or _v3.
type rebuildTensor struct{ version int }

func (r rebuildTensor) PickleType() string {
	return fmt.Sprintf("torch._utils._rebuild_tensor_v%d", r.version)
}

// Call takes (storage, storage_offset, size, stride, requires_grad,
// backward_hooks[, metadata]) for v2 and (storage, storage_offset, size,
// stride, requires_grad, backward_hooks, dtype[, metadata]) for v3.
func (r rebuildTensor) Call(args pickle.Tuple) (pickle.Value, error) {
	want := 6
	if r.version == 3 {
		want = 7
	}
	if len(args) != want && len(args) != want+1 {
		return nil, fmt.Errorf("takes %d or %d arguments, got %d", want, want+1, len(args))
	}
	st, ok := args[0].(*storage)
	if !ok {
		return nil, fmt.Errorf("argument 1 is a %s, not a storage", pickle.TypeName(args[0]))
	}
	off, err := nonNegative(args[1], "storage offset")
	if err != nil {
		return nil, err
	}
	shape, err := dims(args[2], "size")
	if err != nil {
		return nil, err
	}
	stride, err := dims(args[3], "stride")
	if err != nil {
		return nil, err
	}
	if len(shape) != len(stride) {
		return nil, fmt.Errorf("size has %d dimensions but stride has %d", len(shape), len(stride))
	}
	t := &tensorRef{storage: st, dtype: st.dtype, offset: off, shape: shape, stride: stride}
	if r.version == 3 {
		dt, ok := args[6].(dtypeValue)
		if !ok {
			return nil, fmt.Errorf("argument 7 is a %s, not a torch dtype", pickle.TypeName(args[6]))
		}
		t.dtype = dt.dtype
	} else if st.untyped {
		return nil, fmt.Errorf("_rebuild_tensor_v2 of an untyped storage has no dtype")
	}
	return t, nil
}

func nonNegative(v pickle.Value, what string) (uint64, error) {
	i, ok := v.(int64)
	if !ok || i < 0 {
		return 0, fmt.Errorf("%s is %v (a %s), not a non-negative integer", what, v, pickle.TypeName(v))
	}
	return uint64(i), nil
}

func dims(v pickle.Value, what string) ([]uint64, error) {
	var items []pickle.Value
	switch a := v.(type) {
	case pickle.Tuple:
		items = a
	case *pickle.List:
		items = a.Items
	default:
		return nil, fmt.Errorf("%s is a %s, not a tuple", what, pickle.TypeName(v))
	}
	if len(items) > maxDims {
		return nil, fmt.Errorf("%s has %d dimensions (at most %d)", what, len(items), maxDims)
	}
	out := make([]uint64, len(items))
	for i, it := range items {
		d, err := nonNegative(it, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// rebuildParameter is torch._utils._rebuild_parameter(data, requires_grad,
// backward_hooks) and _rebuild_parameter_with_state(..., state): the
// parameter is its data.
type rebuildParameter struct{ withState bool }

func (r rebuildParameter) PickleType() string {
	if r.withState {
		return "torch._utils._rebuild_parameter_with_state"
	}
	return "torch._utils._rebuild_parameter"
}

func (r rebuildParameter) Call(args pickle.Tuple) (pickle.Value, error) {
	want := 3
	if r.withState {
		want = 4
	}
	if len(args) != want {
		return nil, fmt.Errorf("takes %d arguments, got %d", want, len(args))
	}
	t, ok := args[0].(*tensorRef)
	if !ok {
		return nil, fmt.Errorf("data is a %s, not a tensor", pickle.TypeName(args[0]))
	}
	return t, nil
}

// rebuildFromType is torch._tensor._rebuild_from_type_v2(func, type, args,
// state), which torch.save uses for tensors that carry Python attributes.
type rebuildFromType struct{}

func (rebuildFromType) PickleType() string { return "torch._tensor._rebuild_from_type_v2" }

func (rebuildFromType) Call(args pickle.Tuple) (pickle.Value, error) {
	if len(args) != 4 {
		return nil, fmt.Errorf("takes 4 arguments, got %d", len(args))
	}
	f, ok := args[0].(rebuildTensor)
	if !ok {
		if p, isParam := args[0].(rebuildParameter); isParam {
			return callTensor(p, args[2])
		}
		return nil, fmt.Errorf("function is a %s, not a tensor rebuild function", pickle.TypeName(args[0]))
	}
	if _, ok := args[1].(tensorClass); !ok {
		return nil, fmt.Errorf("type is a %s, not torch.Tensor or Parameter", pickle.TypeName(args[1]))
	}
	return callTensor(f, args[2])
}

func callTensor(f pickle.Callable, args pickle.Value) (pickle.Value, error) {
	t, ok := args.(pickle.Tuple)
	if !ok {
		return nil, fmt.Errorf("arguments are a %s, not a tuple", pickle.TypeName(args))
	}
	return f.Call(t)
}

// maxStorages bounds the distinct storages of one archive.
const maxStorages = 1 << 22

// storageTable resolves persistent ids: ('storage', storage_type, key,
// location, numel). The first id of a key decides its dtype and size, as
// torch.load does.
type storageTable struct {
	byKey map[string]*storage
}

func (s *storageTable) load(pid pickle.Value) (pickle.Value, error) {
	t, ok := pid.(pickle.Tuple)
	if !ok || len(t) != 5 {
		return nil, fmt.Errorf("persistent id %s is not a ('storage', type, key, location, numel) tuple", pickle.TypeName(pid))
	}
	if tag, _ := t[0].(string); tag != "storage" {
		return nil, fmt.Errorf("persistent id of kind %v is not supported (only 'storage')", t[0])
	}
	cls, ok := t[1].(storageClass)
	if !ok {
		return nil, fmt.Errorf("persistent id names a %s, not a storage type", pickle.TypeName(t[1]))
	}
	key, ok := t[2].(string)
	if !ok || key == "" || strings.ContainsAny(key, "/\\") || key == "." || key == ".." {
		return nil, fmt.Errorf("storage key %v is not a plain name", t[2])
	}
	loc, _ := t[3].(string)
	numel, err := nonNegative(t[4], "storage size")
	if err != nil {
		return nil, err
	}
	if st, ok := s.byKey[key]; ok {
		return st, nil
	}
	if len(s.byKey) >= maxStorages {
		return nil, fmt.Errorf("more than %d storages", maxStorages)
	}
	info, _ := cls.dtype.Info()
	hi, nbytes := bits.Mul64(numel, info.BlockBytes)
	if hi != 0 || nbytes > 1<<62 {
		return nil, fmt.Errorf("storage %s: %d elements of %s overflow", key, numel, cls.dtype)
	}
	st := &storage{key: key, dtype: cls.dtype, untyped: cls.untyped, nbytes: nbytes, location: loc}
	s.byKey[key] = st
	return st, nil
}
