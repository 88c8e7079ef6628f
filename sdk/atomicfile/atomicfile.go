// Package atomicfile writes output files so that nothing half-written ever
// appears under the final name: data goes to a temporary file in the same
// directory, which Commit syncs and renames into place (then syncs the
// directory) and Abort removes.
//
// Temporary names are ".NAME.sluice-tmp-PID-RANDOM". CleanStale removes those
// left behind by a process that no longer runs.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// File is an output file being written under a temporary name.
type File struct {
	*os.File
	final string

	mu   sync.Mutex
	done bool
}

const tmpMarker = ".sluice-tmp-"

// Create starts writing path. When size > 0 the space is reserved at once
// (fallocate where the system has it), so a full disk is reported before any
// work is done, with the bytes needed.
func Create(path string, size int64) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating output directory for %s: %w", path, err)
	}
	CleanStale(path)
	f, err := os.CreateTemp(dir, "."+base+tmpMarker+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	af := &File{File: f, final: path}
	// CreateTemp makes the file private; outputs get the usual permissions.
	if err := f.Chmod(0o666 &^ umask()); err != nil {
		af.Abort()
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	if size > 0 {
		if err := reserve(f, size); err != nil {
			af.Abort()
			if errors.Is(err, syscall.ENOSPC) {
				return nil, &NoSpaceError{Path: path, Needed: size, Err: err}
			}
			return nil, fmt.Errorf("reserving %d bytes for %s: %w", size, path, err)
		}
	}
	return af, nil
}

// NoSpaceError reports a full disk for an output, with the bytes it needed.
type NoSpaceError struct {
	Path   string
	Needed int64
	Err    error
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("no space left on the device for %s: it needs %d bytes", e.Path, e.Needed)
}

// Unwrap returns the system error.
func (e *NoSpaceError) Unwrap() error { return e.Err }

// FinalPath returns the name the file gets on Commit.
func (f *File) FinalPath() string { return f.final }

// Commit syncs the file, renames it to its final name and syncs the
// directory. After Commit the File is closed.
func (f *File) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return fmt.Errorf("%s: already committed or aborted", f.final)
	}
	f.done = true
	tmp := f.File.Name()
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		os.Remove(tmp)
		return wrapNoSpace(f.final, fmt.Errorf("syncing %s: %w", f.final, err))
	}
	if err := f.File.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("closing %s: %w", f.final, err)
	}
	if err := os.Rename(tmp, f.final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("renaming into %s: %w", f.final, err)
	}
	return SyncDir(filepath.Dir(f.final))
}

// Abort closes and removes the temporary file. It is safe to call more than
// once and after Commit (then it does nothing).
func (f *File) Abort() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return nil
	}
	f.done = true
	f.File.Close()
	if err := os.Remove(f.File.Name()); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing temporary file of %s: %w", f.final, err)
	}
	return nil
}

func wrapNoSpace(path string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return &NoSpaceError{Path: path, Err: err}
	}
	return err
}

// SyncDir fsyncs a directory so a rename in it survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// CleanStale removes temporary files for path left by processes that no
// longer run. It returns the names it removed.
func CleanStale(path string) []string {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := "." + base + tmpMarker
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		pidStr, _, _ := strings.Cut(name[len(prefix):], "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if os.Remove(filepath.Join(dir, name)) == nil {
			removed = append(removed, filepath.Join(dir, name))
		}
	}
	return removed
}

// IsTemp reports whether name is one of this package's temporary names.
func IsTemp(name string) bool { return strings.Contains(filepath.Base(name), tmpMarker) }
