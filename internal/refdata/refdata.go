// Package refdata finds, for tests, the module root and the reference data
// kept in ../shared beside it: ggml reference vectors and files (ref/quant,
// ref/gguf), tokenizer and chat-template references (tokref), seeds. That
// directory is not part of the repository, so a test that needs it skips,
// saying what is missing, where it is absent.
package refdata

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ModuleRoot returns the directory of the go.mod above the working
// directory, or fails the test when there is none.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Path returns ../shared/elem… beside the module root (../shared itself
// without elem). It skips the test, with the reason, when that file or
// directory does not exist or no go.mod is found above the working
// directory.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Skipf("%v, so no ../shared: the reference data is not available", err)
	}
	p := filepath.Join(append([]string{root, "..", "shared"}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference data not available (%v): ../shared lives beside the repository, outside it", err)
	}
	return p
}

// FindModuleRoot returns the directory of the go.mod above the working
// directory, for programs (the benchmarks) that look for ../shared too.
func FindModuleRoot() (string, error) { return moduleRoot() }

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
