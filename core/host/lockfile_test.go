package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l, err := ReadLock(dir)
	if err != nil || l.Exists || len(l.Plugins) != 0 {
		t.Fatalf("a missing lock file: %+v, %v", l, err)
	}
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	l.Record("zeta", "1.0.0", "1.1", a)
	l.Record("npz", "0.2.0", "1.1", b)
	l.Plugins["npz"].SHA256["darwin_arm64"] = a
	if err := l.Write(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, LockFileName))
	if i, j := strings.Index(string(raw), `plugin "npz"`), strings.Index(string(raw), `plugin "zeta"`); i < 0 || j < i {
		t.Errorf("plugins are not sorted:\n%s", raw)
	}
	got, err := ReadLock(dir)
	if err != nil || !got.Exists {
		t.Fatal(err)
	}
	if string(got.Bytes()) != string(raw) {
		t.Errorf("the lock file is not canonical:\n%s\nrewritten:\n%s", raw, got.Bytes())
	}
	e := got.Plugins["npz"]
	if e.Version != "0.2.0" || e.Protocol != "1.1" || e.SHA256[Platform()] != b || e.SHA256["darwin_arm64"] != a {
		t.Errorf("npz entry: %+v", e)
	}
	if pins := got.Pins(); pins["npz"] != b || pins["zeta"] != a || len(got.MissingPlatform()) != 0 {
		t.Errorf("pins %v, missing %v", pins, got.MissingPlatform())
	}
	// The same version on this platform keeps the other platforms; a new
	// version drops them.
	got.Record("npz", "0.2.0", "1.1", a)
	if len(got.Plugins["npz"].SHA256) != 2 {
		t.Errorf("reinstalling the same version dropped a platform: %v", got.Plugins["npz"].SHA256)
	}
	got.Record("npz", "0.3.0", "1.1", b)
	if s := got.Plugins["npz"].SHA256; len(s) != 1 || s[Platform()] != b {
		t.Errorf("a new version kept other platforms' digests: %v", s)
	}
}

func TestLockFileErrors(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{"plugin \"x\" {\n  version = \"1\"\n  sha256 = { linux_amd64 = \"abc\" }\n}\n", "not 64 lowercase hexadecimal digits"},
		{"plugin \"x\" {\n  version = \"1\"\n  sha256 = { linux_amd64 = \"" + strings.Repeat("A", 64) + "\" }\n}\n", "lowercase"},
		{"plugin \"x\" {\n  sha256 = {}\n}\n", "version"},
		{"plugin \"x\" {\n  version = \"1\"\n  sha256 = {}\n}\nplugin \"x\" {\n  version = \"1\"\n  sha256 = {}\n}\n", "listed twice"},
		{"plugins {}\n", "plugins"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, LockFileName), []byte(tc.src), 0o644)
		_, err := ReadLock(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error about %q", tc.src, err, tc.want)
		}
		var le *LockError
		if errors.As(err, &le) && !le.BadConfig() {
			t.Errorf("a lock parse error is not a configuration error")
		}
	}
	// A plugin locked for other platforms only is pinned to nothing.
	l := &Lock{Plugins: map[string]*LockedPlugin{"x": {Name: "x", SHA256: map[string]string{"plan9_arm": strings.Repeat("a", 64)}}}}
	if l.Pins()["x"] != strings.Repeat("0", 64) || len(l.MissingPlatform()) != 1 {
		t.Errorf("pins %v", l.Pins())
	}
}

func TestPluginDirectories(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	def := filepath.Join(cfg, "sluice", "plugins")
	if got := SearchPath(""); len(got) != 1 || got[0] != def {
		t.Errorf("SearchPath(\"\") = %v, want [%s]", got, def)
	}
	if got, _ := InstallDir(""); got != def {
		t.Errorf("InstallDir(\"\") = %s", got)
	}
	a, b := filepath.Join(cfg, "a"), filepath.Join(cfg, "b")
	list := a + string(os.PathListSeparator) + string(os.PathListSeparator) + b
	if got := SearchPath(list); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("SearchPath = %v", got)
	}
	if got, _ := InstallDir(list); got != a {
		t.Errorf("InstallDir = %s", got)
	}
}
