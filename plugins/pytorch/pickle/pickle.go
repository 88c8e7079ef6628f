// Package pickle is a restricted Python unpickler that runs no code.
//
// It interprets the pickle opcodes of protocols 0 to 5 into plain Go values
// (see Value). A pickle names callables through GLOBAL and STACK_GLOBAL
// opcodes and applies them with REDUCE, BUILD, NEWOBJ, INST or OBJ; here
// every global goes through the caller's Find function, which returns a Go
// value standing for it or refuses it. Nothing is imported, looked up by
// reflection or executed: a global Find does not return cannot appear on the
// stack, and only values implementing Callable or StateSetter can be applied.
// The stack, the mark stack, the memo and integer sizes are bounded (Limits).
//
// It is for reading data files such as PyTorch checkpoints. It is not a
// general-purpose unpickler: it does not rebuild Python objects.
package pickle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits bounds the resources one Load may use. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// MaxStack bounds the number of values on the stack, marks included.
	MaxStack int
	// MaxMarks bounds the nesting of MARK opcodes.
	MaxMarks int
	// MaxMemo bounds the number of memo entries.
	MaxMemo int
	// MaxIntBytes bounds the encoded size of one integer (LONG1, LONG4).
	MaxIntBytes int
	// MaxLine bounds the length of a text line (GLOBAL names, text ints).
	MaxLine int
	// MaxWork bounds the work callables do, in items they iterate over
	// (arguments' lengths), so a small pickle cannot call an allowed
	// global on a large memoized list again and again. Zero means 64 units
	// per pickle byte plus 2^20.
	MaxWork int64
}

// DefaultLimits are generous for any state dict: a 70B-parameter checkpoint
// needs a stack of a few thousand values and a memo of tens of thousands.
var DefaultLimits = Limits{
	MaxStack:    1 << 20,
	MaxMarks:    1 << 12,
	MaxMemo:     1 << 22,
	MaxIntBytes: 64,
	MaxLine:     4096,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxStack > 0 {
		d.MaxStack = l.MaxStack
	}
	if l.MaxMarks > 0 {
		d.MaxMarks = l.MaxMarks
	}
	if l.MaxMemo > 0 {
		d.MaxMemo = l.MaxMemo
	}
	if l.MaxIntBytes > 0 {
		d.MaxIntBytes = l.MaxIntBytes
	}
	if l.MaxLine > 0 {
		d.MaxLine = l.MaxLine
	}
	d.MaxWork = l.MaxWork
	return d
}

// Error reports a pickle the machine refuses: malformed, over a limit, or
// asking for something the caller does not allow. Offset is the byte offset
// of the opcode in the pickle.
type Error struct {
	Offset int64
	Op     string // opcode name, when one is concerned
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("pickle byte %d", e.Offset)
	if e.Op != "" {
		s += " (" + e.Op + ")"
	}
	s += ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Machine interprets one pickle. Its zero value refuses every global and
// every persistent id.
type Machine struct {
	// Find returns the value standing for global module.name, or an error
	// that says why it is refused. Nil refuses every global.
	Find func(module, name string) (Value, error)
	// PersistentLoad resolves a persistent id (PERSID, BINPERSID). Nil
	// refuses them.
	PersistentLoad func(pid Value) (Value, error)
	// Limits bounds the resources used; zero fields take DefaultLimits.
	Limits Limits
	// UniqueKeys refuses a dict key that is set twice. Python keeps the
	// last value, but a pickler never writes a key twice, so in a
	// checkpoint it can only be damage or a trick (two tensors of one name).
	UniqueKeys bool
}

type machine struct {
	*Machine
	lim   Limits
	data  []byte
	pos   int
	op    int // offset of the current opcode
	name  string
	stack []Value
	marks []int
	memo  map[uint64]Value
	work  int64
}

// Load interprets data and returns the value of its STOP opcode.
func (m *Machine) Load(data []byte) (Value, error) {
	st := &machine{Machine: m, lim: m.Limits.withDefaults(), data: data, memo: map[uint64]Value{}}
	if st.lim.MaxWork == 0 {
		st.lim.MaxWork = 64*int64(len(data)) + 1<<20
	}
	return st.run()
}

func (m *machine) fail(format string, args ...any) error {
	return &Error{Offset: int64(m.op), Op: m.name, Msg: fmt.Sprintf(format, args...)}
}

func (m *machine) wrap(err error, format string, args ...any) error {
	return &Error{Offset: int64(m.op), Op: m.name, Msg: fmt.Sprintf(format, args...), Err: err}
}

func (m *machine) take(n uint64) ([]byte, error) {
	if n > uint64(len(m.data)-m.pos) {
		return nil, m.fail("needs %d bytes, only %d left in the pickle (truncated?)", n, len(m.data)-m.pos)
	}
	b := m.data[m.pos : m.pos+int(n)]
	m.pos += int(n)
	return b, nil
}

func (m *machine) u8() (uint8, error) {
	b, err := m.take(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (m *machine) u16() (uint16, error) {
	b, err := m.take(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (m *machine) u32() (uint32, error) {
	b, err := m.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (m *machine) u64() (uint64, error) {
	b, err := m.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// line reads up to and excluding the next newline.
func (m *machine) line() (string, error) {
	rest := m.data[m.pos:]
	limit := min(len(rest), m.lim.MaxLine+1)
	i := strings.IndexByte(string(rest[:limit]), '\n')
	if i < 0 {
		if limit > m.lim.MaxLine {
			return "", m.fail("text line longer than %d bytes", m.lim.MaxLine)
		}
		return "", m.fail("text line has no end (truncated?)")
	}
	m.pos += i + 1
	return string(rest[:i]), nil
}

func (m *machine) push(v Value) error {
	if len(m.stack) >= m.lim.MaxStack {
		return m.fail("stack holds more than %d values", m.lim.MaxStack)
	}
	m.stack = append(m.stack, v)
	return nil
}

func (m *machine) base() int {
	if len(m.marks) == 0 {
		return 0
	}
	return m.marks[len(m.marks)-1]
}

func (m *machine) pop() (Value, error) {
	if len(m.stack) <= m.base() {
		return nil, m.fail("stack underflow")
	}
	v := m.stack[len(m.stack)-1]
	m.stack = m.stack[:len(m.stack)-1]
	return v, nil
}

func (m *machine) top() (Value, error) {
	if len(m.stack) <= m.base() {
		return nil, m.fail("stack underflow")
	}
	return m.stack[len(m.stack)-1], nil
}

// popMark removes and returns the values above the innermost mark.
func (m *machine) popMark() ([]Value, error) {
	if len(m.marks) == 0 {
		return nil, m.fail("no MARK on the stack")
	}
	b := m.marks[len(m.marks)-1]
	m.marks = m.marks[:len(m.marks)-1]
	items := append([]Value(nil), m.stack[b:]...)
	m.stack = m.stack[:b]
	return items, nil
}

func (m *machine) memoPut(idx uint64) error {
	v, err := m.top()
	if err != nil {
		return err
	}
	if _, ok := m.memo[idx]; !ok && len(m.memo) >= m.lim.MaxMemo {
		return m.fail("memo holds more than %d values", m.lim.MaxMemo)
	}
	m.memo[idx] = v
	return nil
}

func (m *machine) memoGet(idx uint64) error {
	v, ok := m.memo[idx]
	if !ok {
		return m.fail("memo index %d was never stored", idx)
	}
	return m.push(v)
}

func (m *machine) global(module, name string) error {
	if m.Find == nil {
		return m.fail("global %s.%s is not allowed", module, name)
	}
	v, err := m.Find(module, name)
	if err != nil {
		return m.wrap(err, "global %s.%s", module, name)
	}
	return m.push(v)
}

func (m *machine) call(f Value, args Tuple) error {
	c, ok := f.(Callable)
	if !ok {
		return m.fail("cannot call a %s; only allowed globals are callable", TypeName(f))
	}
	cost := int64(1)
	for _, a := range args {
		cost += shallowSize(a)
	}
	if err := m.spend(cost); err != nil {
		return err
	}
	v, err := c.Call(args)
	if err != nil {
		return m.wrap(err, "calling %s", TypeName(f))
	}
	return m.push(v)
}

// decodeLong decodes a little-endian two's-complement integer.
func (m *machine) decodeLong(b []byte) (Value, error) {
	if len(b) > m.lim.MaxIntBytes {
		return nil, m.fail("integer of %d bytes is over the limit of %d", len(b), m.lim.MaxIntBytes)
	}
	if len(b) == 0 {
		return int64(0), nil
	}
	if len(b) <= 8 {
		var u uint64
		for i := len(b) - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		shift := 64 - 8*uint(len(b))
		return int64(u<<shift) >> shift, nil
	}
	return &BigInt{LE: append([]byte(nil), b...)}, nil
}

func (m *machine) textInt(s string) (Value, error) {
	s = strings.TrimSuffix(s, "L")
	switch s {
	case "00":
		return false, nil
	case "01":
		return true, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, m.fail("text integer %q is not a 64-bit integer", s)
	}
	return v, nil
}

func (m *machine) textIndex(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, m.fail("memo index %q is not a number", s)
	}
	return v, nil
}

func (m *machine) run() (Value, error) {
	for {
		if m.pos >= len(m.data) {
			m.op = m.pos
			m.name = ""
			return nil, m.fail("pickle ends without a STOP opcode (truncated?)")
		}
		m.op = m.pos
		code := m.data[m.pos]
		m.pos++
		m.name = opName(code)
		done, result, err := m.step(code)
		if err != nil {
			return nil, err
		}
		if done {
			return result, nil
		}
	}
}

// errNeverRuns marks opcodes refused because they would need code to run.
var errNeverRuns = errors.New("refused: this opcode would run code or reach outside the pickle")

func (m *machine) step(code byte) (done bool, result Value, err error) {
	switch code {
	case opProto:
		v, err := m.u8()
		if err != nil {
			return false, nil, err
		}
		if v > 5 {
			return false, nil, m.fail("unsupported pickle protocol %d (0 to 5 are known)", v)
		}
	case opFrame:
		n, err := m.u64()
		if err != nil {
			return false, nil, err
		}
		if n > uint64(len(m.data)-m.pos) {
			return false, nil, m.fail("frame of %d bytes passes the end of the pickle", n)
		}
	case opStop:
		v, err := m.pop()
		if err != nil {
			return false, nil, err
		}
		return true, v, nil
	case opMark:
		if len(m.marks) >= m.lim.MaxMarks {
			return false, nil, m.fail("MARKs nest deeper than %d", m.lim.MaxMarks)
		}
		m.marks = append(m.marks, len(m.stack))
	case opPop:
		if len(m.stack) > m.base() {
			_, err = m.pop()
		} else {
			_, err = m.popMark()
		}
	case opPopMark:
		_, err = m.popMark()
	case opDup:
		var v Value
		if v, err = m.top(); err == nil {
			err = m.push(v)
		}
	case opNone:
		err = m.push(None{})
	case opNewTrue:
		err = m.push(true)
	case opNewFalse:
		err = m.push(false)
	case opBinInt:
		var v uint32
		if v, err = m.u32(); err == nil {
			err = m.push(int64(int32(v)))
		}
	case opBinInt1:
		var v uint8
		if v, err = m.u8(); err == nil {
			err = m.push(int64(v))
		}
	case opBinInt2:
		var v uint16
		if v, err = m.u16(); err == nil {
			err = m.push(int64(v))
		}
	case opLong1, opLong4:
		var n uint64
		if code == opLong1 {
			var b uint8
			b, err = m.u8()
			n = uint64(b)
		} else {
			var b uint32
			b, err = m.u32()
			if int32(b) < 0 {
				return false, nil, m.fail("negative integer length %d", int32(b))
			}
			n = uint64(b)
		}
		if err != nil {
			return false, nil, err
		}
		if n > uint64(m.lim.MaxIntBytes) {
			return false, nil, m.fail("integer of %d bytes is over the limit of %d", n, m.lim.MaxIntBytes)
		}
		var b []byte
		if b, err = m.take(n); err != nil {
			return false, nil, err
		}
		var v Value
		if v, err = m.decodeLong(b); err == nil {
			err = m.push(v)
		}
	case opInt, opLong:
		var s string
		if s, err = m.line(); err != nil {
			return false, nil, err
		}
		var v Value
		if v, err = m.textInt(s); err == nil {
			err = m.push(v)
		}
	case opFloat:
		var s string
		if s, err = m.line(); err != nil {
			return false, nil, err
		}
		f, perr := strconv.ParseFloat(s, 64)
		if perr != nil {
			return false, nil, m.fail("text float %q is not a number", s)
		}
		err = m.push(f)
	case opBinFloat:
		var b []byte
		if b, err = m.take(8); err == nil {
			err = m.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
		}
	case opShortBinUnicode, opShortBinString, opShortBinBytes:
		var n uint8
		if n, err = m.u8(); err != nil {
			return false, nil, err
		}
		err = m.pushBlob(code, uint64(n))
	case opBinUnicode, opBinString, opBinBytes:
		var n uint32
		if n, err = m.u32(); err != nil {
			return false, nil, err
		}
		if code == opBinString && int32(n) < 0 {
			return false, nil, m.fail("negative string length %d", int32(n))
		}
		err = m.pushBlob(code, uint64(n))
	case opBinUnicode8, opBinBytes8, opByteArray8:
		var n uint64
		if n, err = m.u64(); err != nil {
			return false, nil, err
		}
		err = m.pushBlob(code, n)
	case opEmptyTuple:
		err = m.push(Tuple{})
	case opTuple1, opTuple2, opTuple3:
		n := int(code-opTuple1) + 1
		t := make(Tuple, n)
		for i := n - 1; i >= 0; i-- {
			if t[i], err = m.pop(); err != nil {
				return false, nil, err
			}
		}
		err = m.push(t)
	case opTuple:
		var items []Value
		if items, err = m.popMark(); err == nil {
			err = m.push(Tuple(items))
		}
	case opEmptyList:
		err = m.push(&List{})
	case opList:
		var items []Value
		if items, err = m.popMark(); err == nil {
			err = m.push(&List{Items: items})
		}
	case opEmptyDict:
		err = m.push(NewDict())
	case opDict:
		var items []Value
		if items, err = m.popMark(); err != nil {
			return false, nil, err
		}
		d := NewDict()
		if err = m.setItems(d, items); err == nil {
			err = m.push(d)
		}
	case opEmptySet:
		err = m.push(&Set{})
	case opFrozenSet:
		var items []Value
		if items, err = m.popMark(); err == nil {
			err = m.push(&Set{Items: items, Frozen: true})
		}
	case opAppend:
		var v, l Value
		if v, err = m.pop(); err != nil {
			return false, nil, err
		}
		if l, err = m.top(); err != nil {
			return false, nil, err
		}
		list, ok := l.(*List)
		if !ok {
			return false, nil, m.fail("APPEND to a %s; only lists are allowed", TypeName(l))
		}
		list.Items = append(list.Items, v)
	case opAppends:
		var items []Value
		if items, err = m.popMark(); err != nil {
			return false, nil, err
		}
		var l Value
		if l, err = m.top(); err != nil {
			return false, nil, err
		}
		list, ok := l.(*List)
		if !ok {
			return false, nil, m.fail("APPENDS to a %s; only lists are allowed", TypeName(l))
		}
		list.Items = append(list.Items, items...)
	case opAddItems:
		var items []Value
		if items, err = m.popMark(); err != nil {
			return false, nil, err
		}
		var s Value
		if s, err = m.top(); err != nil {
			return false, nil, err
		}
		set, ok := s.(*Set)
		if !ok || set.Frozen {
			return false, nil, m.fail("ADDITEMS to a %s; only sets are allowed", TypeName(s))
		}
		set.Items = append(set.Items, items...)
	case opSetItem:
		var k, v, d Value
		if v, err = m.pop(); err != nil {
			return false, nil, err
		}
		if k, err = m.pop(); err != nil {
			return false, nil, err
		}
		if d, err = m.top(); err != nil {
			return false, nil, err
		}
		dict, ok := d.(*Dict)
		if !ok {
			return false, nil, m.fail("SETITEM on a %s; only dicts are allowed", TypeName(d))
		}
		if _, dup := dict.Get(k); dup && m.UniqueKeys {
			return false, nil, m.fail("SETITEM: key %.100s is set twice (a pickler never writes that)", keyText(k))
		}
		if e := dict.Set(k, v); e != nil {
			return false, nil, m.wrap(e, "SETITEM")
		}
	case opSetItems:
		var items []Value
		if items, err = m.popMark(); err != nil {
			return false, nil, err
		}
		var d Value
		if d, err = m.top(); err != nil {
			return false, nil, err
		}
		dict, ok := d.(*Dict)
		if !ok {
			return false, nil, m.fail("SETITEMS on a %s; only dicts are allowed", TypeName(d))
		}
		err = m.setItems(dict, items)
	case opPut:
		var s string
		if s, err = m.line(); err != nil {
			return false, nil, err
		}
		var idx uint64
		if idx, err = m.textIndex(s); err == nil {
			err = m.memoPut(idx)
		}
	case opBinPut:
		var idx uint8
		if idx, err = m.u8(); err == nil {
			err = m.memoPut(uint64(idx))
		}
	case opLongBinPut:
		var idx uint32
		if idx, err = m.u32(); err == nil {
			err = m.memoPut(uint64(idx))
		}
	case opMemoize:
		err = m.memoPut(uint64(len(m.memo)))
	case opGet:
		var s string
		if s, err = m.line(); err != nil {
			return false, nil, err
		}
		var idx uint64
		if idx, err = m.textIndex(s); err == nil {
			err = m.memoGet(idx)
		}
	case opBinGet:
		var idx uint8
		if idx, err = m.u8(); err == nil {
			err = m.memoGet(uint64(idx))
		}
	case opLongBinGet:
		var idx uint32
		if idx, err = m.u32(); err == nil {
			err = m.memoGet(uint64(idx))
		}
	case opGlobal:
		var module, name string
		if module, err = m.line(); err != nil {
			return false, nil, err
		}
		if name, err = m.line(); err != nil {
			return false, nil, err
		}
		err = m.global(module, name)
	case opStackGlobal:
		var mod, name Value
		if name, err = m.pop(); err != nil {
			return false, nil, err
		}
		if mod, err = m.pop(); err != nil {
			return false, nil, err
		}
		ms, ok1 := mod.(string)
		ns, ok2 := name.(string)
		if !ok1 || !ok2 {
			return false, nil, m.fail("STACK_GLOBAL needs two strings, got %s and %s", TypeName(mod), TypeName(name))
		}
		err = m.global(ms, ns)
	case opReduce:
		var args, f Value
		if args, err = m.pop(); err != nil {
			return false, nil, err
		}
		if f, err = m.pop(); err != nil {
			return false, nil, err
		}
		t, ok := args.(Tuple)
		if !ok {
			return false, nil, m.fail("REDUCE arguments are a %s, not a tuple", TypeName(args))
		}
		err = m.call(f, t)
	case opBuild:
		var state, inst Value
		if state, err = m.pop(); err != nil {
			return false, nil, err
		}
		if inst, err = m.top(); err != nil {
			return false, nil, err
		}
		s, ok := inst.(StateSetter)
		if !ok {
			return false, nil, m.fail("BUILD on a %s is not allowed", TypeName(inst))
		}
		if e := s.SetState(state); e != nil {
			return false, nil, m.wrap(e, "BUILD on a %s", TypeName(inst))
		}
	case opInst:
		var module, name string
		if module, err = m.line(); err != nil {
			return false, nil, err
		}
		if name, err = m.line(); err != nil {
			return false, nil, err
		}
		var args []Value
		if args, err = m.popMark(); err != nil {
			return false, nil, err
		}
		if err = m.global(module, name); err != nil {
			return false, nil, err
		}
		var f Value
		if f, err = m.pop(); err == nil {
			err = m.call(f, Tuple(args))
		}
	case opObj:
		var items []Value
		if items, err = m.popMark(); err != nil {
			return false, nil, err
		}
		if len(items) == 0 {
			return false, nil, m.fail("OBJ without a class")
		}
		err = m.call(items[0], Tuple(items[1:]))
	case opNewObj, opNewObjEx:
		var kwargs Value = NewDict()
		if code == opNewObjEx {
			if kwargs, err = m.pop(); err != nil {
				return false, nil, err
			}
		}
		var args, cls Value
		if args, err = m.pop(); err != nil {
			return false, nil, err
		}
		if cls, err = m.pop(); err != nil {
			return false, nil, err
		}
		t, ok := args.(Tuple)
		kw, okk := kwargs.(*Dict)
		if !ok || !okk || kw.Len() != 0 {
			return false, nil, m.fail("%s needs a tuple of arguments and no keywords", m.name)
		}
		n, ok := cls.(Newer)
		if !ok {
			return false, nil, m.fail("%s of a %s is not allowed", m.name, TypeName(cls))
		}
		if e := m.spend(1 + shallowSize(t)); e != nil {
			return false, nil, e
		}
		v, e := n.New(t)
		if e != nil {
			return false, nil, m.wrap(e, "%s of a %s", m.name, TypeName(cls))
		}
		err = m.push(v)
	case opPersID:
		var s string
		if s, err = m.line(); err == nil {
			err = m.persistent(s)
		}
	case opBinPersID:
		var pid Value
		if pid, err = m.pop(); err == nil {
			err = m.persistent(pid)
		}
	case opString:
		var s string
		if s, err = m.line(); err != nil {
			return false, nil, err
		}
		var v string
		if v, err = m.quoted(s); err == nil {
			err = m.push(v)
		}
	case opUnicode:
		var s string
		if s, err = m.line(); err != nil {
			return false, nil, err
		}
		var v string
		if v, err = m.rawUnicode(s); err == nil {
			err = m.push(v)
		}
	case opExt1, opExt2, opExt4, opNextBuffer, opReadonlyBuffer:
		return false, nil, m.wrap(errNeverRuns, "opcode 0x%02x is not supported", code)
	default:
		return false, nil, m.fail("unknown opcode 0x%02x", code)
	}
	return false, nil, err
}

func (m *machine) pushBlob(code byte, n uint64) error {
	b, err := m.take(n)
	if err != nil {
		return err
	}
	switch code {
	case opShortBinBytes, opBinBytes, opBinBytes8, opByteArray8:
		return m.push(Bytes(append([]byte(nil), b...)))
	case opShortBinUnicode, opBinUnicode, opBinUnicode8:
		// Python decodes these as UTF-8 and fails on anything else.
		if !utf8.Valid(b) {
			return m.fail("%s string of %d bytes is not valid UTF-8", opNames[code], len(b))
		}
	}
	return m.push(string(b))
}

func (m *machine) setItems(d *Dict, items []Value) error {
	if len(items)%2 != 0 {
		return m.fail("odd number of items (%d) for a dict", len(items))
	}
	for i := 0; i < len(items); i += 2 {
		if _, dup := d.Get(items[i]); dup && m.UniqueKeys {
			return m.fail("dict item %d: key %.100s is set twice (a pickler never writes that)", i/2, keyText(items[i]))
		}
		if err := d.Set(items[i], items[i+1]); err != nil {
			return m.wrap(err, "dict item %d", i/2)
		}
	}
	return nil
}

// keyText shows a dict key in an error.
func keyText(k Value) string {
	if s, ok := k.(string); ok {
		return strconv.Quote(s)
	}
	return TypeName(k)
}

func (m *machine) persistent(pid Value) error {
	if m.PersistentLoad == nil {
		return m.fail("persistent ids are not allowed")
	}
	v, err := m.PersistentLoad(pid)
	if err != nil {
		return m.wrap(err, "persistent id")
	}
	return m.push(v)
}

// spend charges work against the budget.
func (m *machine) spend(n int64) error {
	m.work += n
	if m.work > m.lim.MaxWork {
		return m.fail("the pickle asks for more work than %d units (a hostile pickle?)", m.lim.MaxWork)
	}
	return nil
}

// shallowSize is the number of items or bytes a callable may iterate over
// in one argument.
func shallowSize(v Value) int64 {
	switch a := v.(type) {
	case string:
		return int64(len(a))
	case Bytes:
		return int64(len(a))
	case Tuple:
		return int64(len(a))
	case *List:
		return int64(len(a.Items))
	case *Dict:
		return int64(a.Len())
	case *Set:
		return int64(len(a.Items))
	}
	return 1
}

// Newer is a value NEWOBJ and NEWOBJ_EX may instantiate with arguments.
type Newer interface {
	New(args Tuple) (Value, error)
}

// quoted decodes the Python string literal of a protocol-0 STRING opcode:
// quotes around it, backslash escapes inside.
func (m *machine) quoted(s string) (string, error) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return "", m.fail("STRING argument %.40q is not quoted", s)
	}
	s = s[1 : len(s)-1]
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			out = append(out, c)
			continue
		}
		i++
		switch c = s[i]; c {
		case '\\', '\'', '"':
			out = append(out, c)
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'n':
			out = append(out, 10)
		case 'r':
			out = append(out, 13)
		case 't':
			out = append(out, 9)
		case 'v':
			out = append(out, 11)
		case 'x':
			if i+3 > len(s) {
				return "", m.fail("STRING has a truncated \\x escape")
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", m.fail("STRING has a bad \\x escape")
			}
			out = append(out, byte(v))
			i += 2
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := 0
			j := i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			out = append(out, byte(v))
			i = j - 1
		default:
			out = append(out, '\\', c)
		}
	}
	return string(out), nil
}

// rawUnicode decodes the raw-unicode-escape text of a protocol-0 UNICODE
// opcode: \uXXXX and \UXXXXXXXX escapes, other bytes as Latin-1.
func (m *machine) rawUnicode(s string) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') {
			n := 4
			if s[i+1] == 'U' {
				n = 8
			}
			if i+2+n > len(s) {
				return "", m.fail("UNICODE has a truncated escape")
			}
			v, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32)
			if err != nil || v > 0x10ffff {
				return "", m.fail("UNICODE has a bad escape")
			}
			sb.WriteRune(rune(v))
			i += 1 + n
			continue
		}
		sb.WriteRune(rune(c))
	}
	return sb.String(), nil
}
