// Package digestcache keeps, in the user's cache directory, the SHA-256 of
// the input files (and of the sluice and plugin binaries) that runs have
// hashed for their run manifests, with each file's size and modification
// time. A later run that finds a file as it
// was (same size, same time) takes the digest from the cache instead of
// reading the file again, whatever pipeline or output it belongs to.
//
// Run manifests beside the outputs already give that reuse to a rerun of the
// same pipeline; the cache gives it to every conversion of a checkpoint
// after its first: another quantization type, a scheduled job, a CI matrix
// over one model. A file whose time is too close to its hashing to prove
// anything (run.FileRecord.ModTime empty) is never cached.
//
// The cache is a JSON file of at most MaxEntries files, the least recently
// used dropped first. Runs that save it at the same time each merge their
// entries into the file as it is then and replace it with a rename, so a
// reader never sees half a file; an entry can be lost to such a race, never
// corrupted.
package digestcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
)

// MaxEntries is the most files a cache holds.
const MaxEntries = 4096

// maxFileSize is the largest cache file Load reads: MaxEntries entries take
// about 1.5 MiB with paths of 200 bytes.
const maxFileSize = 16 << 20

// fileVersion is the version of the file's format.
const fileVersion = 1

// FileName is the cache's name in the sluice cache directory.
const FileName = "input-digests.json"

// Entry is one file's digest and the size and modification time it was
// computed at.
type Entry struct {
	Size uint64 `json:"size"`
	// ModTime is the file's modification time (RFC 3339, nanoseconds), as
	// run manifests write it.
	ModTime string `json:"mtime"`
	SHA256  string `json:"sha256"`
	// Used is when a run last recorded or used the entry.
	Used time.Time `json:"used"`
}

// Cache is a digest cache file and the entries it holds.
type Cache struct {
	path string
	// Files holds the entries by absolute path.
	Files map[string]Entry
	// added holds the entries Record made, for Save to merge.
	added map[string]Entry
}

type fileFormat struct {
	Version int              `json:"version"`
	Files   map[string]Entry `json:"files"`
}

// DefaultPath returns the cache's path in the user's cache directory:
// os.UserCacheDir()/sluice/input-digests.json ($XDG_CACHE_HOME/sluice/… or
// ~/.cache/sluice/… on Linux).
func DefaultPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user's cache directory for the input digest cache: %w", err)
	}
	return filepath.Join(dir, "sluice", FileName), nil
}

// Load reads the cache at path. A missing file is an empty cache. A file
// that cannot be read or parsed gives an empty cache too, with an error
// that says why; Save then replaces it.
func Load(path string) (*Cache, error) {
	c := &Cache{path: path, Files: map[string]Entry{}, added: map[string]Entry{}}
	files, err := readFile(path)
	if err != nil {
		return c, err
	}
	c.Files = files
	return c, nil
}

// readFile returns the entries of the cache file at path, none when there
// is no file.
func readFile(path string) (map[string]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Entry{}, nil
	}
	if err != nil {
		return map[string]Entry{}, fmt.Errorf("reading the input digest cache: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return map[string]Entry{}, fmt.Errorf("reading the input digest cache: %w", err)
	}
	if len(b) > maxFileSize {
		return map[string]Entry{}, fmt.Errorf("input digest cache %s is larger than %d MiB, more than %d entries take; it will be replaced", path, maxFileSize>>20, MaxEntries)
	}
	var ff fileFormat
	if err := json.Unmarshal(b, &ff); err != nil {
		return map[string]Entry{}, fmt.Errorf("input digest cache %s is not valid JSON (%v); it will be replaced", path, err)
	}
	if ff.Version != fileVersion {
		return map[string]Entry{}, fmt.Errorf("input digest cache %s has version %d, this sluice writes %d; it will be replaced", path, ff.Version, fileVersion)
	}
	files := map[string]Entry{}
	for p, e := range ff.Files {
		if filepath.IsAbs(p) && e.ModTime != "" && len(e.SHA256) == 64 {
			files[p] = e
		}
	}
	return files, nil
}

// Record adds the digest of the file at path (absolute), or refreshes it,
// and marks it used now. An entry without a modification time or a digest
// is ignored: nothing could trust it.
func (c *Cache) Record(path string, e Entry) {
	if !filepath.IsAbs(path) || e.ModTime == "" || len(e.SHA256) != 64 {
		return
	}
	e.Used = time.Now().UTC()
	c.Files[path] = e
	c.added[path] = e
}

// Save merges the entries Record made into the cache file as it is now
// (another run may have saved it since Load), keeps the MaxEntries most
// recently used, and replaces the file. The file is not synced: losing it
// to a crash only costs reading the inputs again.
func (c *Cache) Save() error {
	if len(c.added) == 0 {
		return nil
	}
	files, _ := readFile(c.path) // a damaged file is replaced
	for p, e := range c.added {
		files[p] = e
	}
	if len(files) > MaxEntries {
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Slice(paths, func(i, j int) bool { return files[paths[i]].Used.After(files[paths[j]].Used) })
		for _, p := range paths[MaxEntries:] {
			delete(files, p)
		}
	}
	b, err := json.MarshalIndent(fileFormat{Version: fileVersion, Files: files}, "", " ")
	if err != nil {
		return fmt.Errorf("writing the input digest cache: %w", err)
	}
	f, err := atomicfile.Create(c.path, 0)
	if err != nil {
		return fmt.Errorf("writing the input digest cache: %w", err)
	}
	f.SkipFsync()
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Abort()
		return fmt.Errorf("writing the input digest cache %s: %w", c.path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("writing the input digest cache: %w", err)
	}
	c.Files = files
	clear(c.added)
	return nil
}
