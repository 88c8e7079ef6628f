package pickle

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Value is any value the machine builds: None, bool, int64, *BigInt,
// float64, string (a Python str), Bytes, Tuple, *List, *Dict, *Set, or
// whatever the Find and PersistentLoad callbacks return.
type Value = any

// None is Python's None.
type None struct{}

// Bytes is a Python bytes or bytearray object.
type Bytes []byte

// BigInt is a Python int that does not fit in 64 bits, kept as the
// little-endian two's-complement bytes the pickle held. No arithmetic is done
// on it.
type BigInt struct{ LE []byte }

// Tuple is a Python tuple.
type Tuple []Value

// List is a Python list. It is a pointer type so that the memo and the
// stack share it the way Python objects are shared.
type List struct{ Items []Value }

// Set is a Python set or frozenset. Items are kept in pickle order; duplicates
// are not removed.
type Set struct {
	Items  []Value
	Frozen bool
}

// Dict is a Python dict (or collections.OrderedDict) whose keys keep their
// insertion order. Keys must be hashable: None, bool, int, float, str, bytes,
// or tuples of those.
type Dict struct {
	keys  []Value
	vals  []Value
	index map[string]int
	// Ordered reports that the dict was built by collections.OrderedDict.
	Ordered bool
	// State is the value a BUILD opcode gave the object (OrderedDict
	// instances carry attributes such as a state dict's _metadata), or nil.
	State Value
}

// NewDict returns an empty dict.
func NewDict() *Dict { return &Dict{index: map[string]int{}} }

// Len returns the number of items.
func (d *Dict) Len() int { return len(d.keys) }

// Keys returns the keys in insertion order. The slice is shared.
func (d *Dict) Keys() []Value { return d.keys }

// Values returns the values in insertion order. The slice is shared.
func (d *Dict) Values() []Value { return d.vals }

// Get returns the value of key.
func (d *Dict) Get(key Value) (Value, bool) {
	h, err := hashKey(key, 0)
	if err != nil {
		return nil, false
	}
	i, ok := d.index[h]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

// Set sets key to v, keeping the first position of an existing key as
// Python does.
func (d *Dict) Set(key, v Value) error {
	h, err := hashKey(key, 0)
	if err != nil {
		return err
	}
	if d.index == nil {
		d.index = map[string]int{}
	}
	if i, ok := d.index[h]; ok {
		d.vals[i] = v
		return nil
	}
	d.index[h] = len(d.keys)
	d.keys = append(d.keys, key)
	d.vals = append(d.vals, v)
	return nil
}

// Bounds on a dict key: its tuple nesting and the size of its canonical
// form, so hashing a key costs little whatever the pickle holds.
const (
	maxKeyDepth = 32
	maxKeyBytes = 16 << 10
)

var errKeyTooLarge = fmt.Errorf("dict key is larger than %d bytes", maxKeyBytes)

// hashKey renders a hashable value as a string that is equal for values
// Python treats as the same key (1, 1.0 and True are one key).
func hashKey(v Value, depth int) (string, error) {
	var sb strings.Builder
	if err := writeKey(&sb, v, depth); err != nil {
		return "", err
	}
	return sb.String(), nil
}

func writeKey(sb *strings.Builder, v Value, depth int) error {
	if depth > maxKeyDepth {
		return fmt.Errorf("dict key nests tuples deeper than %d", maxKeyDepth)
	}
	if sb.Len() > maxKeyBytes {
		return errKeyTooLarge
	}
	part := func(tag string, s string) error {
		if sb.Len()+len(s) > maxKeyBytes {
			return errKeyTooLarge
		}
		sb.WriteString(tag + strconv.Itoa(len(s)) + ":" + s)
		return nil
	}
	switch k := v.(type) {
	case None:
		return part("n", "")
	case bool:
		if k {
			return part("i", "1")
		}
		return part("i", "0")
	case int64:
		return part("i", strconv.FormatInt(k, 10))
	case float64:
		if k == math.Trunc(k) && math.Abs(k) < 1<<63 {
			return part("i", strconv.FormatInt(int64(k), 10))
		}
		return part("f", strconv.FormatUint(math.Float64bits(k), 16))
	case *BigInt:
		return part("I", fmt.Sprintf("%x", k.LE))
	case string:
		return part("s", k)
	case Bytes:
		return part("b", string(k))
	case Tuple:
		if err := part("t", strconv.Itoa(len(k))); err != nil {
			return err
		}
		for _, e := range k {
			if err := writeKey(sb, e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unhashable dict key of type %s", TypeName(v))
}

// TypeName names the Python type of a value for error messages.
func TypeName(v Value) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case None:
		return "NoneType"
	case bool:
		return "bool"
	case int64, *BigInt:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case Bytes:
		return "bytes"
	case Tuple:
		return "tuple"
	case *List:
		return "list"
	case *Dict:
		return "dict"
	case *Set:
		return "set"
	case mark:
		return "mark"
	}
	if n, ok := v.(interface{ PickleType() string }); ok {
		return n.PickleType()
	}
	return fmt.Sprintf("%T", v)
}

// Callable is a value that REDUCE, NEWOBJ, INST or OBJ may apply to
// arguments. Only the Find callback can put one on the stack, so the
// allowlist decides what can be called; nothing else ever is.
type Callable interface {
	Call(args Tuple) (Value, error)
}

// StateSetter is a value that accepts the state of a BUILD opcode.
type StateSetter interface {
	SetState(state Value) error
}

// mark is the MARK opcode's stack sentinel.
type mark struct{}

// SetState accepts a BUILD state for an OrderedDict, which may carry
// attributes (a state dict's _metadata); a plain dict has none in Python and
// refuses it.
func (d *Dict) SetState(state Value) error {
	if !d.Ordered {
		return fmt.Errorf("a plain dict has no attributes to set")
	}
	d.State = state
	return nil
}
