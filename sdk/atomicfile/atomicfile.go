// Package atomicfile writes output files so that nothing half-written ever
// appears under the final name: data goes to a temporary file in the same
// directory, which Commit syncs and renames into place (then syncs the
// directory) and Abort removes. A file told SkipFsync is renamed without the
// syncs: still never half-written under its name while the machine runs, but
// a crash of the machine may leave it incomplete.
//
// Temporary names are ".NAME.sluice-tmp-PID-RANDOM". CleanStale removes those
// left behind by a process that no longer runs.
package atomicfile

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// File is an output file being written under a temporary name.
type File struct {
	*os.File
	final string

	mu        sync.Mutex
	done      bool
	committed bool
	noFsync   bool
	dig       *Follower // the whole file's SHA-256; nil unless StartDigest
	// followers holds dig and those Follow started, a new list at each, so
	// that the early syncs read it without mu: Commit and Abort hold mu
	// while they wait for the sync in flight.
	followers atomic.Pointer[[]*Follower]

	writeback Writeback // what was written since its writeback last started

	hooks DoneHooks // run once the file is committed or aborted
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
	af.writeback.DropBehind(af.readFront)
	// CreateTemp makes the file private; outputs get the usual permissions.
	if err := f.Chmod(0o666 &^ umask()); err != nil {
		af.Abort()
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	if size > 0 {
		if err := reserve(f, size); err != nil {
			af.Abort()
			if IsNoSpace(err) {
				return nil, &NoSpaceError{Path: path, Needed: size, Err: err}
			}
			return nil, fmt.Errorf("reserving %d bytes for %s: %w", size, path, err)
		}
	}
	return af, nil
}

// NoSpaceError reports a full disk for an output (ENOSPC), or a file size
// limit it passes (EFBIG: ulimit -f), with the bytes it needed.
type NoSpaceError struct {
	// Path is the output's final name.
	Path string
	// Needed is the output's size in bytes; 0 when unknown.
	Needed int64
	Err    error
}

func (e *NoSpaceError) Error() string {
	what := "no space left on the device for " + e.Path
	if errors.Is(e.Err, syscall.EFBIG) {
		what = e.Path + " is larger than the file size limit (ulimit -f) allows"
	}
	if e.Needed > 0 {
		return fmt.Sprintf("%s: it needs %d bytes (%s); nothing was left under its name", what, e.Needed, humanBytes(e.Needed))
	}
	return what + "; nothing was left under its name"
}

// Hint suggests a next step.
func (e *NoSpaceError) Hint() string {
	if errors.Is(e.Err, syscall.EFBIG) {
		return "raise the file size limit (ulimit -f), or shard the output into smaller files"
	}
	return "free space on the device that holds " + filepath.Dir(e.Path) + ", or write the output elsewhere"
}

// humanBytes renders n with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// IsNoSpace reports whether err is a full disk (ENOSPC) or a file size
// limit (EFBIG).
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EFBIG)
}

// AsNoSpace turns an error that comes from writing the temporary file of an
// output (it names the temporary file) into a *NoSpaceError naming the
// output, when it is a full disk or a file size limit; needed is the
// output's size, 0 when unknown. Other errors are returned as they are.
func AsNoSpace(err error, needed int64) error {
	if err == nil || !IsNoSpace(err) {
		return err
	}
	var ns *NoSpaceError
	if errors.As(err, &ns) {
		if ns.Needed == 0 {
			ns.Needed = needed
		}
		return ns
	}
	path := ""
	var pe *os.PathError
	if errors.As(err, &pe) {
		path = pe.Path
		if final, ok := FinalName(pe.Path); ok {
			path = final
		}
	}
	return &NoSpaceError{Path: path, Needed: needed, Err: err}
}

// FinalName returns the output name a temporary file of this package stands
// for: ".NAME.sluice-tmp-PID-RANDOM" in DIR gives DIR/NAME.
func FinalName(temp string) (string, bool) {
	dir, base := filepath.Split(temp)
	i := strings.Index(base, tmpMarker)
	if !strings.HasPrefix(base, ".") || i <= 1 {
		return "", false
	}
	return filepath.Join(dir, base[1:i]), true
}

// Unwrap returns the system error.
func (e *NoSpaceError) Unwrap() error { return e.Err }

// FinalPath returns the name the file gets on Commit.
func (f *File) FinalPath() string { return f.final }

// Commit syncs the file, renames it to its final name and syncs the
// directory. After Commit the File is closed. A file with a digest
// (StartDigest) finishes hashing while it is synced, unless the digest was
// relayed (RelayDigest).
func (f *File) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return fmt.Errorf("%s: already committed or aborted", f.final)
	}
	f.done = true
	defer f.hooks.End()
	tmp := f.File.Name()
	fail := func(err error) error {
		f.cancelFollowers()
		f.File.Close()
		os.Remove(tmp)
		return err
	}
	var hashed chan error
	if f.dig != nil && !f.dig.relaying() {
		st, err := f.File.Stat()
		if err != nil {
			return fail(fmt.Errorf("committing %s: %w", f.final, err))
		}
		hashed = make(chan error, 1)
		go func() { hashed <- f.dig.Finish(st.Size()) }()
	}
	// An early sync's error first: the final fsync would not report it.
	if err := f.writeback.Wait(); !f.noFsync {
		if err == nil {
			err = fsync(f.File)
		}
		if err != nil {
			return fail(WrapNoSpace(f.final, fmt.Errorf("syncing %s: %w", f.final, err)))
		}
	}
	if hashed != nil {
		if err := <-hashed; err != nil {
			return fail(err)
		}
	}
	f.cancelFollowers() // any a sink did not finish
	if err := f.File.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("closing %s: %w", f.final, err)
	}
	if err := os.Rename(tmp, f.final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("renaming into %s: %w", f.final, err)
	}
	f.committed = true
	if f.noFsync {
		return nil
	}
	return SyncDir(filepath.Dir(f.final))
}

// Written records that bytes [off, off+n) of the file were just written,
// and hands them to the kernel's writeback as Writeback does, unless the
// file will not be synced (SkipFsync): then the kernel writes the pages
// back when it likes, after the run if it likes. The early syncs drop the
// pages they made durable from the page cache once the file's followers
// (StartDigest, Follow) have read them (Writeback.DropBehind); a file whose
// digest was relayed (RelayDigest) keeps them, for its digest's new reader,
// and so does a file told KeepCached.
func (f *File) Written(off, n int64) {
	if f.Fsyncs() {
		f.writeback.Written(f.File, off, n)
	}
}

// SkipFsync makes Commit rename the file without syncing it or its
// directory first. The rename still keeps a killed process from leaving a
// half-written file under the final name; only a crash of the machine
// (power, kernel) before the kernel has written the file back may. Call it
// before Commit.
func (f *File) SkipFsync() {
	f.mu.Lock()
	f.noFsync = true
	f.mu.Unlock()
}

// Fsyncs reports whether Commit will sync the file; Written hands written
// bytes to the kernel's writeback only then.
func (f *File) Fsyncs() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.noFsync
}

// fsync syncs a file or directory; tests count the calls.
var fsync = (*os.File).Sync

// Abort closes and removes the temporary file. It is safe to call more than
// once and after Commit (then it does nothing).
func (f *File) Abort() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return nil
	}
	f.done = true
	defer f.hooks.End()
	f.cancelFollowers()
	f.writeback.Wait()
	f.File.Close()
	if err := os.Remove(f.File.Name()); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing temporary file of %s: %w", f.final, err)
	}
	return nil
}

// OnDone has fn run once the file is committed or aborted, whichever ends
// it, or at once if it has ended. A writer uses it to release what it holds
// for the file's sake (sdk/plugin keeps the sources of file references
// open until then). fn runs while the file ends, so it must not call the
// file's methods.
func (f *File) OnDone(fn func()) { f.hooks.OnDone(fn) }

// DoneHooks holds what is to run once something a writer holds resources
// for has ended: a file committed or aborted, or closed. The zero value is
// ready to use.
type DoneHooks struct {
	mu    sync.Mutex
	ended bool
	fns   []func()
}

// OnDone queues fn to run at End, or runs it at once if End has run.
func (h *DoneHooks) OnDone(fn func()) {
	h.mu.Lock()
	if !h.ended {
		h.fns = append(h.fns, fn)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	fn()
}

// End runs the queued functions, in the order they came; later calls do
// nothing.
func (h *DoneHooks) End() {
	h.mu.Lock()
	h.ended = true
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// KeepCached keeps the file's pages in the page cache after its early
// syncs, which otherwise drop those no follower reads any more (Written). A
// writer that reads the file back itself once it is written (a checksum at
// Commit, a spool compressed into the output) calls it before its first
// write: reading the pages back from the disk would cost more than the
// memory they hold. So does one whose user reads the file next
// (plugin.BeginOptions.KeepCache).
func (f *File) KeepCached() { f.writeback.DropBehind(nil) }

// readFront returns the offset before which none of the file's followers
// reads any more.
func (f *File) readFront() int64 {
	front := int64(math.MaxInt64)
	for _, d := range f.followerList() {
		front = min(front, d.ReadFront())
	}
	return front
}

// followerList returns the file's followers.
func (f *File) followerList() []*Follower {
	if l := f.followers.Load(); l != nil {
		return *l
	}
	return nil
}

// cancelFollowers stops every follower and waits for them, so the file can
// be closed.
func (f *File) cancelFollowers() {
	for _, d := range f.followerList() {
		d.cancel()
	}
}

// AbortAll aborts every file, nil ones skipped, and returns the first error.
// A sink's Abort uses it to remove all its outputs even when one fails.
func AbortAll(files ...*File) error {
	var first error
	for _, f := range files {
		if f == nil {
			continue
		}
		if err := f.Abort(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WrapNoSpace returns err as a *NoSpaceError for the output path when it is
// a full disk or a file size limit, and err itself otherwise.
func WrapNoSpace(path string, err error) error {
	if IsNoSpace(err) {
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
	if err := fsync(d); err != nil && !errors.Is(err, syscall.EINVAL) {
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
