package pickle

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func p(parts ...string) []byte { return []byte(strings.Join(parts, "")) }

func TestValues(t *testing.T) {
	shared := &List{Items: []Value{int64(1)}}
	for name, tc := range map[string]struct {
		pkl  []byte
		want Value
	}{
		"BININT1":          {p("\x80\x02K\x07."), int64(7)},
		"BININT2":          {p("M\x01\x02."), int64(0x201)},
		"BININT negative":  {p("J\xfe\xff\xff\xff."), int64(-2)},
		"LONG1 negative":   {p("\x8a\x02\x00\xff."), int64(-256)},
		"LONG1 empty":      {p("\x8a\x00."), int64(0)},
		"LONG1 big":        {p("\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x00\x01."), &BigInt{LE: []byte{1, 0, 0, 0, 0, 0, 0, 0, 1}}},
		"INT text":         {p("I42\n."), int64(42)},
		"INT bool":         {p("I01\n."), true},
		"LONG text":        {p("L-5L\n."), int64(-5)},
		"FLOAT text":       {p("F0.25\n."), 0.25},
		"BINFLOAT":         {p("G\x3f\xf0\x00\x00\x00\x00\x00\x00."), 1.0},
		"NONE":             {p("N."), None{}},
		"NEWFALSE":         {p("\x89."), false},
		"SHORT_BINUNICODE": {p("\x8c\x03h\xc3\xa9."), "hé"},
		"BINUNICODE":       {p("X\x02\x00\x00\x00ab."), "ab"},
		"BINBYTES":         {p("B\x02\x00\x00\x00\x00\xff."), Bytes{0, 0xff}},
		"SHORT_BINBYTES":   {p("C\x01z."), Bytes("z")},
		"BYTEARRAY8":       {p("\x96\x01\x00\x00\x00\x00\x00\x00\x00q."), Bytes("q")},
		"STRING escapes":   {p(`S'a\'b\n\x41\101'`, "\n."), "a'b\nAA"},
		"UNICODE escapes":  {p(`Vx\u00e9\U0001F600`, "\n."), "xé😀"},
		"TUPLE2":           {p("K\x01K\x02\x86."), Tuple{int64(1), int64(2)}},
		"TUPLE":            {p("(K\x01K\x02K\x03K\x04t."), Tuple{int64(1), int64(2), int64(3), int64(4)}},
		"EMPTY_TUPLE":      {p(")."), Tuple{}},
		"LIST APPENDS":     {p("](K\x01K\x02eK\x03a."), &List{Items: []Value{int64(1), int64(2), int64(3)}}},
		"LIST":             {p("(K\x01l."), &List{Items: []Value{int64(1)}}},
		"FROZENSET":        {p("(K\x01\x91."), &Set{Items: []Value{int64(1)}, Frozen: true}},
		"SET ADDITEMS":     {p("\x8f(K\x01\x90."), &Set{Items: []Value{int64(1)}}},
		"memo sharing":     {p("]q\x00K\x01ah\x00\x86."), Tuple{shared, shared}},
		"MEMOIZE":          {p("\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x05\x94h\x00\x86."), Tuple{int64(5), int64(5)}},
		"POP DUP":          {p("K\x01K\x020\x32\x86."), Tuple{int64(1), int64(1)}},
		"POP_MARK":         {p("K\x09(K\x01K\x021."), int64(9)},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := (&Machine{}).Load(tc.pkl)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestDicts(t *testing.T) {
	// {"a": 1, 1: 2, True: 3, (1, "x"): 4}: True and 1 are one key.
	got, err := (&Machine{}).Load(p("}(X\x01\x00\x00\x00aK\x01K\x01K\x02\x88K\x03K\x01X\x01\x00\x00\x00x\x86K\x04u."))
	if err != nil {
		t.Fatal(err)
	}
	d := got.(*Dict)
	if d.Len() != 3 {
		t.Fatalf("%d keys, want 3: %v", d.Len(), d.Keys())
	}
	if v, _ := d.Get(int64(1)); v != int64(3) {
		t.Errorf("d[1] = %v, want 3 (True overwrote it in place)", v)
	}
	if v, _ := d.Get(Tuple{int64(1), "x"}); v != int64(4) {
		t.Errorf("d[(1, 'x')] = %v", v)
	}
	if !reflect.DeepEqual(d.Keys()[0], "a") {
		t.Errorf("order lost: %v", d.Keys())
	}
}

// callable is a test global that records its calls.
type callable struct{ calls *int }

func (c callable) Call(args Tuple) (Value, error) { *c.calls++; return len(args), nil }

func TestGlobalsGoThroughFind(t *testing.T) {
	calls := 0
	var asked []string
	m := &Machine{Find: func(module, name string) (Value, error) {
		asked = append(asked, module+"."+name)
		if module == "ok" {
			return callable{&calls}, nil
		}
		return nil, fmt.Errorf("no")
	}}
	if _, err := m.Load(p("cok\nf\n(K\x01K\x02tR.")); err != nil || calls != 1 {
		t.Fatalf("allowed call: %v, %d calls", err, calls)
	}
	if _, err := m.Load(p("\x8c\x02ok\x8c\x01g\x93)R.")); err != nil || calls != 2 {
		t.Fatalf("STACK_GLOBAL call: %v", err)
	}
	if _, err := m.Load(p("(K\x01iok\nh\n.")); err != nil || calls != 3 {
		t.Fatalf("INST call: %v", err)
	}
	_, err := m.Load(p("cos\nsystem\n(X\x01\x00\x00\x00xtR."))
	var pe *Error
	if !errors.As(err, &pe) || pe.Offset != 0 || !strings.Contains(err.Error(), "os.system") {
		t.Errorf("refused global: %v", err)
	}
	if calls != 3 || asked[len(asked)-1] != "os.system" {
		t.Errorf("calls %d, asked %v", calls, asked)
	}
}

func TestRefusals(t *testing.T) {
	calls := 0
	find := func(module, name string) (Value, error) { return callable{&calls}, nil }
	for name, tc := range map[string]struct {
		pkl  []byte
		find func(string, string) (Value, error)
		want string
	}{
		"no Find":             {p("cos\nsystem\n."), nil, "global os.system is not allowed"},
		"REDUCE non-callable": {p("K\x01)R."), nil, "cannot call a int"},
		"BUILD on dict":       {p("}}b."), nil, "plain dict"},
		"BUILD on list":       {p("]}b."), nil, "BUILD on a list"},
		"NEWOBJ":              {p("cx\ny\n)\x81."), find, "NEWOBJ of a"},
		"EXT1":                {p("\x82\x01."), nil, "not supported"},
		"NEXT_BUFFER":         {p("\x97."), nil, "not supported"},
		"persistent id":       {p("K\x01Q."), nil, "persistent ids are not allowed"},
		"APPEND to dict":      {p("}K\x01a."), nil, "APPEND to a dict"},
		"SETITEM on list":     {p("]K\x01K\x02s."), nil, "SETITEM on a list"},
		"unhashable key":      {p("}]K\x01s."), nil, "unhashable"},
		"unknown opcode":      {p("\xff."), nil, "unknown opcode 0xff"},
		"protocol 6":          {p("\x80\x06."), nil, "protocol 6"},
		"no STOP":             {p("K\x01"), nil, "without a STOP"},
		"underflow":           {p("a."), nil, "underflow"},
		"POP_MARK no mark":    {p("K\x011."), nil, "no MARK"},
		"underflow at mark":   {p("K\x01(a."), nil, "underflow"},
		"missing memo":        {p("h\x05."), nil, "never stored"},
		"odd dict":            {p("(K\x01d."), nil, "odd number"},
		"bad STRING":          {p("Sabc\n."), nil, "not quoted"},
		"huge BINUNICODE8":    {p("\x8d\xff\xff\xff\xff\xff\xff\xff\x7f."), nil, "only 1 left"},
		"huge FRAME":          {p("\x95\xff\xff\xff\xff\x00\x00\x00\x00."), nil, "passes the end"},
		"negative LONG4":      {p("\x8b\xff\xff\xff\xff."), nil, "negative"},
		"huge LONG4":          {p("\x8b\x00\x00\x00\x01."), nil, "over the limit"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := (&Machine{Find: tc.find}).Load(tc.pkl)
			var pe *Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an *Error containing %q", err, tc.want)
			}
		})
	}
	if calls != 0 {
		t.Errorf("a refused pickle called %d globals", calls)
	}
}

func TestLimits(t *testing.T) {
	many := func(s string, n int) string { return strings.Repeat(s, n) }
	calls := 0
	find := func(module, name string) (Value, error) { return callable{&calls}, nil }
	for name, tc := range map[string]struct {
		pkl  []byte
		lim  Limits
		want string
	}{
		"stack":     {p(many("N", 11), "."), Limits{MaxStack: 10}, "stack holds more than 10"},
		"marks":     {p(many("(", 11), "."), Limits{MaxMarks: 10}, "MARKs nest deeper than 10"},
		"memo":      {p("N", many("\x94", 11), "."), Limits{MaxMemo: 10}, "memo holds more than 10"},
		"line":      {p("I", many("1", 100), "\n."), Limits{MaxLine: 50}, "longer than 50"},
		"int bytes": {p("\x8a\x10", many("\x01", 16), "."), Limits{MaxIntBytes: 8}, "over the limit of 8"},
		// A list of 1000 items memoized, then an allowed global called on
		// it again and again.
		"work":     {p("]q\x00(", many("N", 1000), "e", many("cf\ng\nh\x00\x85R0", 300), "."), Limits{MaxWork: 100000}, "more work"},
		"key size": {p("}X\x00\x00\x01\x00", many("k", 1<<16), "K\x01s."), Limits{}, "larger than"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := (&Machine{Find: find, Limits: tc.lim}).Load(tc.pkl)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
