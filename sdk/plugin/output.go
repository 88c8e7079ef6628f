package plugin

import (
	"fmt"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
)

// CreateOutput starts an output file under a temporary name
// (atomicfile.Create, space reserved when size > 0), set up as Begin's
// options ask: hashed as it is written when opts.Digests (declare the bytes
// that will not change with File.Final), renamed unsynced at its commit
// when opts.NoFsync, its pages kept in the page cache when opts.KeepCache.
func CreateOutput(path string, size int64, opts BeginOptions) (*atomicfile.File, error) {
	f, err := atomicfile.Create(path, size)
	if err != nil {
		return nil, err
	}
	if opts.Digests {
		f.StartDigest()
	}
	if opts.NoFsync {
		f.SkipFsync()
	}
	if opts.KeepCache {
		f.KeepCached()
	}
	return f, nil
}

// Committed returns the artifact of an output CreateOutput started and
// Commit renamed into place: its final path, size, and SHA-256 when the file
// computed one over exactly size bytes.
func Committed(f *atomicfile.File, size uint64) Artifact {
	a := Artifact{Path: f.FinalPath(), Size: size}
	if sha, n, ok := f.Digest(); ok && uint64(n) == size {
		a.SHA256 = sha
	}
	return a
}

// WriteOutput writes a small output whole (an index, a side file) under a
// temporary name and commits it, as CreateOutput and Committed do.
func WriteOutput(path string, b []byte, opts BeginOptions) (Artifact, error) {
	f, err := CreateOutput(path, int64(len(b)), opts)
	if err != nil {
		return Artifact{}, err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Abort()
		return Artifact{}, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return Artifact{}, err
	}
	return Committed(f, uint64(len(b))), nil
}
