// Package localpath resolves file names that come from inside a checkpoint —
// a shard index's weight map, an ONNX external-data location, the sibling
// shards of a split set, the side files of a Hugging Face directory —
// against the directory they must stay in.
//
// A checkpoint downloaded from the internet must not make a reader open a
// file elsewhere on the machine (and copy it into an output): a name is
// refused when it is empty, absolute, climbs out with "..", holds a NUL or a
// backslash, or resolves through symbolic links to a file outside the
// directory.
//
// One exception, made on purpose: the Hugging Face cache. There, files sit
// under …/models--ORG--NAME/snapshots/REVISION/ as symbolic links to
// ../../blobs/SHA, in the same cache repository. A link from a directory
// inside a snapshot may resolve anywhere inside its own cache repository
// (the parent of snapshots/, whose name starts with "models--",
// "datasets--" or "spaces--"), and nowhere else.
//
// The package checks names; it does not open files. It is not a sandbox:
// a file can still be swapped between the check and the open by someone who
// can write to the directory.
package localpath

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Error reports a name that leads out of its directory. It is the input's
// fault: BadInput reports true.
type Error struct {
	// Dir is the directory the name had to stay in.
	Dir string
	// Name is the name as the checkpoint gave it.
	Name string
	// Reason says what is wrong.
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%.200q: %s (a checkpoint may only name files in its own directory, %s)", e.Name, e.Reason, e.Dir)
}

// BadInput marks the error as caused by the input.
func (e *Error) BadInput() bool { return true }

// CheckName checks a name without touching the file system: not empty, not
// absolute, no "..", no NUL, no backslash, not the directory itself. Subdirectories ("onnx/weights.bin") are allowed; formats whose names
// must be plain file names check for "/" themselves.
func CheckName(dir, name string) error {
	bad := func(reason string) error { return &Error{Dir: dir, Name: name, Reason: reason} }
	switch {
	case name == "":
		return bad("the name is empty")
	case strings.ContainsRune(name, 0):
		return bad("the name holds a NUL byte")
	case strings.ContainsRune(name, '\\'):
		return bad("the name holds a backslash")
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/") || filepath.VolumeName(name) != "":
		return bad("the name is an absolute path")
	case !filepath.IsLocal(name):
		return bad("the name leaves the directory")
	case filepath.Clean(name) == ".":
		return bad("the name is the directory itself")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return bad("the name leaves the directory")
		}
	}
	return nil
}

// Resolve checks name (see CheckName), joins it to dir and checks that the
// result, with every symbolic link resolved, lies inside dir — or inside the
// Hugging Face cache repository dir belongs to. It returns the joined path
// (not the resolved one, so messages show the name the user knows). A file
// that does not exist is reported with its *PathError wrapped.
func Resolve(dir, name string) (string, error) {
	if err := CheckName(dir, name); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if err := Inside(dir, p); err != nil {
		return "", err
	}
	return p, nil
}

// Inside checks that path p, with every symbolic link resolved, lies inside
// dir (also resolved), or inside the Hugging Face cache repository that dir
// is a snapshot of.
func Inside(dir, p string) error {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("resolving the directory %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", p, err)
	}
	if within(realDir, real) {
		return nil
	}
	if repo, ok := CacheRepo(realDir); ok && within(repo, real) {
		return nil
	}
	rel, _ := filepath.Rel(dir, p)
	if rel == "" {
		rel = p
	}
	return &Error{Dir: dir, Name: rel, Reason: "it resolves through a symbolic link to " + real + ", outside the directory"}
}

// within reports whether p is root or lies under it (both cleaned, absolute
// or both relative).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// CacheRepo reports the Hugging Face cache repository a resolved directory
// belongs to: for …/models--ORG--NAME/snapshots/REVISION[/SUB…] it returns
// …/models--ORG--NAME.
func CacheRepo(realDir string) (string, bool) {
	d := filepath.Clean(realDir)
	for {
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		if filepath.Base(parent) == "snapshots" {
			repo := filepath.Dir(parent)
			base := filepath.Base(repo)
			for _, kind := range []string{"models--", "datasets--", "spaces--"} {
				if strings.HasPrefix(base, kind) && len(base) > len(kind) {
					return repo, true
				}
			}
			return "", false
		}
		d = parent
	}
}
