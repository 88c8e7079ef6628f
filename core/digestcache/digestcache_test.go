package digestcache

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sha(i int) string { return fmt.Sprintf("%064x", i) }

func entry(i int) Entry {
	return Entry{Size: uint64(i), ModTime: "2026-11-30T10:00:00.123456789Z", SHA256: sha(i)}
}

func TestRecordSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice", FileName)
	c, err := Load(path)
	if err != nil || len(c.Files) != 0 {
		t.Fatalf("a missing cache: %v, %d entries", err, len(c.Files))
	}
	c.Record("/models/a.safetensors", entry(1))
	c.Record("relative/b.safetensors", entry(2))                                      // not absolute
	c.Record("/models/c.safetensors", Entry{Size: 3, SHA256: sha(3)})                 // no time
	c.Record("/models/d.safetensors", Entry{Size: 4, ModTime: "x", SHA256: "abc123"}) // not a SHA-256
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != 1 {
		t.Fatalf("cached %v, want /models/a.safetensors only", got.Files)
	}
	e := got.Files["/models/a.safetensors"]
	if e.Size != 1 || e.SHA256 != sha(1) || e.ModTime != entry(1).ModTime || time.Since(e.Used) > time.Minute {
		t.Errorf("read back %+v", e)
	}
}

// Two runs that loaded the cache before either saved both keep their
// entries: Save merges into the file as it is.
func TestConcurrentSavesMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	c1, _ := Load(path)
	c2, _ := Load(path)
	c1.Record("/a", entry(1))
	c2.Record("/b", entry(2))
	if err := c1.Save(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Save(); err != nil {
		t.Fatal(err)
	}
	got, _ := Load(path)
	if len(got.Files) != 2 || got.Files["/a"].SHA256 != sha(1) || got.Files["/b"].SHA256 != sha(2) {
		t.Errorf("after two saves: %v", got.Files)
	}
}

// The cache keeps the MaxEntries most recently used files.
func TestSaveDropsTheLeastRecentlyUsed(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	files := map[string]Entry{}
	for i := range MaxEntries {
		e := entry(i)
		e.Used = old.Add(time.Duration(i) * time.Second)
		files[fmt.Sprintf("/m/%d", i)] = e
	}
	b, _ := json.Marshal(fileFormat{Version: fileVersion, Files: files})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || len(c.Files) != MaxEntries {
		t.Fatalf("loaded %d entries: %v", len(c.Files), err)
	}
	c.Record("/new/1", entry(1))
	c.Record("/new/2", entry(2))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	got, _ := Load(path)
	if len(got.Files) != MaxEntries {
		t.Fatalf("%d entries, want %d", len(got.Files), MaxEntries)
	}
	for _, p := range []string{"/m/0", "/m/1"} {
		if _, ok := got.Files[p]; ok {
			t.Errorf("%s, among the least recently used, was kept", p)
		}
	}
	for _, p := range []string{"/m/2", "/new/1", "/new/2", fmt.Sprintf("/m/%d", MaxEntries-1)} {
		if _, ok := got.Files[p]; !ok {
			t.Errorf("%s was dropped", p)
		}
	}
}

// A damaged cache is reported, read as empty, and replaced by Save.
func TestDamagedCacheIsReplaced(t *testing.T) {
	for name, content := range map[string]string{
		"truncated": `{"version": 1, "files": {"/a": {"size": 1`,
		"version":   `{"version": 99, "files": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), path) || len(c.Files) != 0 {
				t.Fatalf("Load: %v, %d entries; want an error naming the file and no entries", err, len(c.Files))
			}
			c.Record("/a", entry(1))
			if err := c.Save(); err != nil {
				t.Fatal(err)
			}
			if got, err := Load(path); err != nil || got.Files["/a"].SHA256 != sha(1) {
				t.Errorf("after Save: %v, %v", err, got.Files)
			}
		})
	}
}

// Entries a hand-edited file holds that nothing could trust are ignored.
func TestLoadIgnoresUntrustworthyEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	files := map[string]Entry{
		"/ok":       entry(1),
		"rel":       entry(2),
		"/no-time":  {Size: 3, SHA256: sha(3)},
		"/bad-hash": {Size: 4, ModTime: entry(4).ModTime, SHA256: "00"},
	}
	b, _ := json.Marshal(fileFormat{Version: fileVersion, Files: files})
	os.WriteFile(path, b, 0o644)
	c, err := Load(path)
	if err != nil || len(c.Files) != 1 || c.Files["/ok"].SHA256 != sha(1) {
		t.Errorf("Load: %v, %v", err, c.Files)
	}
}

// FuzzLoad reads arbitrary cache files: Load never panics, keeps only
// entries a lookup could trust, and Save then writes a file Load reads back
// without error.
func FuzzLoad(f *testing.F) {
	b, _ := json.Marshal(fileFormat{Version: fileVersion, Files: map[string]Entry{"/a": entry(1), "b": entry(2)}})
	f.Add(b)
	f.Add([]byte(`{"version":1,"files":{"/x":{"size":18446744073709551615,"mtime":"z","sha256":"` + sha(7) + `","used":"2026-01-01T00:00:00Z"}}}`))
	f.Add([]byte(`{"version":1,"files":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, _ := Load(path)
		for p, e := range c.Files {
			if !filepath.IsAbs(p) || e.ModTime == "" || len(e.SHA256) != 64 {
				t.Fatalf("kept %q: %+v", p, e)
			}
		}
		c.Record("/fuzz", entry(1))
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			t.Fatalf("the saved cache does not load: %v", err)
		}
	})
}

// A cache file larger than any cache of MaxEntries entries is not read into
// memory: it is reported and replaced.
func TestOversizedCacheIsNotRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "larger than") || len(c.Files) != 0 {
		t.Fatalf("Load: %v, %d entries", err, len(c.Files))
	}
	c.Record("/a", entry(1))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() > 4096 {
		t.Errorf("the oversized cache was not replaced: %v %v", fi.Size(), err)
	}
}
