package bytesize

import "testing"

func TestParse(t *testing.T) {
	good := map[string]uint64{
		"4GB": 4_000_000_000, "512MiB": 512 << 20, "2 gb": 2e9, "1000": 1000, "0": 0,
		"1.5KB": 1500, "1.5 KiB": 1536, "7B": 7, "3TiB": 3 << 40, "1kb": 1000, " 10 MB ": 10e6,
		"16PiB": 16 << 50, "0.5GiB": 1 << 29,
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GB", "4 G", "4GBs", "-1GB", "1.5B", "1..5GB", ".", "99999999999999PB", "4 GB extra", "0x10"} {
		if n, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", bad, n)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[uint64]string{4 << 30: "4GiB", 1000: "1000B", 1536: "1536B", 0: "0B", 3 << 20: "3MiB"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
		if back, err := Parse(Format(n)); err != nil || back != n {
			t.Errorf("Parse(Format(%d)) = %d, %v", n, back, err)
		}
	}
	for n, want := range map[uint64]string{4e9: "4.00 GB", 999: "999 B", 1234567: "1.23 MB", 999_999: "1.00 MB"} {
		if got := Human(n); got != want {
			t.Errorf("Human(%d) = %q, want %q", n, got, want)
		}
	}
}
