// Package hfcache lays out files the way the Hugging Face hub's cache does, for
// tests: ROOT/models--ORG--NAME/blobs/SHA256 holds each file's bytes and
// ROOT/models--ORG--NAME/snapshots/REVISION/PATH is a relative symbolic link
// to ../../blobs/SHA256 (one more ../ per subdirectory).
package hfcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Revision is the snapshot directory name Make uses.
const Revision = "0123456789abcdef0123456789abcdef01234567"

// Make copies every regular file under src (recursively) into a cache
// repository models--ORG--NAME under root and returns the snapshot directory
// that holds the links.
func Make(root, repo, src string) (string, error) {
	if !strings.Contains(repo, "/") {
		return "", fmt.Errorf("hfcache: repo %q is not ORG/NAME", repo)
	}
	repoDir := filepath.Join(root, "models--"+strings.ReplaceAll(repo, "/", "--"))
	snap := filepath.Join(repoDir, "snapshots", Revision)
	blobs := filepath.Join(repoDir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return "", err
	}
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		blob := filepath.Join(blobs, hex.EncodeToString(sum[:]))
		if err := os.WriteFile(blob, b, 0o644); err != nil {
			return err
		}
		return Link(snap, rel, blob)
	})
	if err != nil {
		return "", err
	}
	return snap, nil
}

// Link makes snap/rel a relative symbolic link to target, as the hub does.
func Link(snap, rel, target string) error {
	l := filepath.Join(snap, rel)
	if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
		return err
	}
	to, err := filepath.Rel(filepath.Dir(l), target)
	if err != nil {
		return err
	}
	return os.Symlink(to, l)
}
