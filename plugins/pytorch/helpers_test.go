package pytorch

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// pk assembles protocol-2 pickles by hand, for checkpoints torch 1.13
// cannot write (float8, uint16 … via _rebuild_tensor_v3) and for corrupt
// or hostile ones.
type pk struct{ bytes.Buffer }

func newPickle() *pk {
	p := &pk{}
	p.WriteByte(0x80)
	p.WriteByte(2)
	return p
}

func (p *pk) op(b ...byte) *pk { p.Write(b); return p }

func (p *pk) str(s string) *pk {
	p.WriteByte('X')
	binary.Write(&p.Buffer, binary.LittleEndian, uint32(len(s)))
	p.WriteString(s)
	return p
}

func (p *pk) int(i int64) *pk {
	p.WriteByte('J')
	binary.Write(&p.Buffer, binary.LittleEndian, int32(i))
	return p
}

func (p *pk) global(module, name string) *pk {
	p.WriteString("c" + module + "\n" + name + "\n")
	return p
}

func (p *pk) ints(v ...int64) *pk {
	p.op('(')
	for _, i := range v {
		p.int(i)
	}
	return p.op('t')
}

// tensorV2 pushes _rebuild_tensor_v2 of a typed storage.
func (p *pk) tensorV2(storageType, key string, numel, offset int64, shape, stride []int64) *pk {
	p.global("torch._utils", "_rebuild_tensor_v2").op('(')
	p.op('(').str("storage").global("torch", storageType).str(key).str("cpu").int(numel).op('t', 'Q')
	p.int(offset).ints(shape...).ints(stride...).op(0x89)
	p.global("collections", "OrderedDict").op(')', 'R')
	return p.op('t', 'R')
}

// tensorV3 pushes _rebuild_tensor_v3 of an untyped storage of nbytes.
func (p *pk) tensorV3(dtype, key string, nbytes, offset int64, shape, stride []int64) *pk {
	p.global("torch._utils", "_rebuild_tensor_v3").op('(')
	p.op('(').str("storage").global("torch", "UntypedStorage").str(key).str("cpu").int(nbytes).op('t', 'Q')
	p.int(offset).ints(shape...).ints(stride...).op(0x89)
	p.global("collections", "OrderedDict").op(')', 'R')
	p.global("torch", dtype)
	return p.op('t', 'R')
}

// entry is one zip member of a hand-built checkpoint.
type entry struct {
	name   string
	data   []byte
	method uint16
}

// writeZip writes a torch-style zip and returns its path.
func writeZip(t *testing.T, entries ...entry) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(p, zipBytes(t, entries...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func le32(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustWrite(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readAll(r io.Reader) ([]byte, error) { return io.ReadAll(r) }
