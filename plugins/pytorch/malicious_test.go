package pytorch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/plugins/pytorch/pickle"
	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Each payload in testdata/malicious was pickled by Python from an object
// whose __reduce__ would create the file "pwned" when loaded by pickle or
// torch.load(weights_only=False). Each must be refused, naming the global,
// and nothing may appear on disk.
// maliciousGlobals maps each file to the global its payload names: Python
// writes builtins as __builtin__ and subprocess as commands in protocol 2, and
// os.system as posix.system.
var maliciousGlobals = map[string]string{
	"os_system_p0.pkl":         "os.system",
	"os_system_p2.pkl":         "posix.system",
	"os_system_p4.pkl":         "posix.system",
	"inst_p0.pkl":              "os.system",
	"eval_p2.pkl":              "__builtin__.eval",
	"eval_p4.pkl":              "builtins.eval",
	"exec_p2.pkl":              "__builtin__.exec",
	"exec_p4.pkl":              "builtins.exec",
	"popen_p2.pkl":             "commands.Popen",
	"popen_p4.pkl":             "subprocess.Popen",
	"getattr_p2.pkl":           "__builtin__.getattr",
	"getattr_p4.pkl":           "builtins.getattr",
	"runpy_p2.pkl":             "runpy._run_code",
	"runpy_p4.pkl":             "runpy._run_code",
	"state_dict_os_system.bin": "posix.system",
	"nested_exec.pt":           "__builtin__.exec",
}

func TestMaliciousPicklesAreRefused(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "malicious", "*"))
	if err != nil || len(files) < 10 {
		t.Fatalf("malicious corpus missing: %v %v", files, err)
	}
	for i := range files {
		if files[i], err = filepath.Abs(files[i]); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	t.Chdir(work) // a payload that ran would write ./pwned here
	for _, f := range files {
		base := filepath.Base(f)
		want := maliciousGlobals[base]
		if want == "" {
			t.Fatalf("%s: no expected global", base)
		}
		t.Run(base, func(t *testing.T) {
			var err error
			if strings.HasSuffix(base, ".pkl") {
				data, rerr := os.ReadFile(f)
				if rerr != nil {
					t.Fatal(rerr)
				}
				// As a bare pickle through the machine, and wrapped as
				// a checkpoint's data.pkl through the source.
				table := &storageTable{byKey: map[string]*storage{}}
				m := &pickle.Machine{Find: findGlobal, PersistentLoad: table.load}
				_, err = m.Load(data)
				var pe *pickle.Error
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
					t.Fatalf("machine: got %v, want a refusal naming %s", err, want)
				}
				f = writeZip(t, entry{name: "archive/data.pkl", data: data})
			}
			s, serr := NewSource(Config{Path: f})
			if serr != nil {
				t.Fatal(serr)
			}
			defer s.Close()
			_, err = s.Describe(context.Background())
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "not allowed") {
				t.Fatalf("source: got %v, want a refusal naming %s", err, want)
			}
			if !plugin.IsBadInput(err) || !errors.Is(err, binio.ErrFormat) {
				t.Errorf("refusal is not a bad-input format error: %T", err)
			}
			if !strings.Contains(err.Error(), f) {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(work, "pwned")); err == nil {
		t.Fatal("a payload ran: ./pwned exists")
	}
}

func TestHostileStructuresAreBounded(t *testing.T) {
	tensor := func(p *pk) *pk { return p.tensorV2("FloatStorage", "0", 1, 0, []int64{1}, []int64{1}) }
	storage := entry{name: "archive/data/0", data: le32(0)}
	cases := map[string]struct {
		pkl  []byte
		want string
	}{
		"dict containing itself": {
			pkl:  newPickle().op('}', 'q', 0).str("a").op('h', 0, 's').str("w").do(tensor).op('s', '.').Bytes(),
			want: "contains itself",
		},
		"exponential sharing": {
			pkl: func() []byte {
				p := newPickle().op('}').str("t").do(tensor).op('s', 'q', 0)
				for i := 1; i < 40; i++ {
					p.op('}').str("a").op('h', byte(i-1), 's').str("b").op('h', byte(i-1), 's', 'q', byte(i))
				}
				return p.op('.').Bytes()
			}(),
			want: "more than",
		},
		"deep nesting": {
			pkl: func() []byte {
				p := newPickle()
				for i := 0; i < 100; i++ {
					p.op('}').str("d")
				}
				p.do(tensor)
				for i := 0; i < 100; i++ {
					p.op('s')
				}
				return p.op('.').Bytes()
			}(),
			want: "deeper than",
		},
		"not a dict": {
			pkl:  newPickle().op(']', '.').Bytes(),
			want: "holds a list",
		},
		"view past the storage": {
			pkl:  newPickle().op('}').str("w").do(func(p *pk) *pk { return p.tensorV2("FloatStorage", "0", 1, 0, []int64{2}, []int64{1}) }).op('s', '.').Bytes(),
			want: `tensor "w": view`,
		},
		"unknown storage type": {
			pkl:  newPickle().op('}').str("w").do(func(p *pk) *pk { return p.tensorV2("ComplexFloatStorage", "0", 1, 0, []int64{1}, []int64{1}) }).op('s', '.').Bytes(),
			want: "global torch.ComplexFloatStorage: not allowed",
		},
		"REDUCE of a non-callable": {
			pkl:  newPickle().global("torch", "float16").op(')', 'R', '.').Bytes(),
			want: "cannot call",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := writeZip(t, entry{name: "archive/data.pkl", data: tc.pkl}, storage)
			s, err := NewSource(Config{Path: p})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Describe(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if !plugin.IsBadInput(err) {
				t.Errorf("not a bad-input error: %v", err)
			}
		})
	}
}

func (p *pk) do(f func(*pk) *pk) *pk { return f(p) }
