package pytorch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/plugins/pytorch/pickle"
)

// FuzzUnpickle feeds arbitrary pickles through the restricted unpickler and
// the state-dict walk: they may fail, never panic or hang.
func FuzzUnpickle(f *testing.F) {
	f.Add(storagesPickle())
	f.Fuzz(func(t *testing.T, data []byte) {
		table := &storageTable{byKey: map[string]*storage{}}
		m := &pickle.Machine{Find: findGlobal, PersistentLoad: table.load,
			Limits: pickle.Limits{MaxStack: 1 << 12, MaxMemo: 1 << 12}}
		root, err := m.Load(data)
		if err != nil {
			return
		}
		sd, _, err := selectStateDict(root, "")
		if err != nil {
			return
		}
		ts, err := flatten(sd)
		if err != nil {
			return
		}
		a := &archive{path: "fuzz"}
		for _, nt := range ts {
			a.checkLayout(nt)
		}
	})
}

// FuzzCheckpoint feeds arbitrary files to the source: Describe and Open
// may fail, never panic.
func FuzzCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.bin")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := NewSource(Config{Path: p})
		if err != nil {
			return
		}
		defer s.Close()
		m, err := s.Describe(context.Background())
		if err != nil {
			return
		}
		for _, ti := range m.Tensors {
			if ti.Size > 1<<20 {
				continue
			}
			rc, err := s.Open(context.Background(), ti.Name)
			if err != nil {
				continue
			}
			b, err := readAll(rc)
			rc.Close()
			if err == nil && uint64(len(b)) != ti.Size {
				t.Fatalf("%s: %d bytes, size %d", ti.Name, len(b), ti.Size)
			}
		}
	})
}
