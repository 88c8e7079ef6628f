package standby

import (
	"bytes"
	"errors"
	"os"
)

// ChildArgs are the arguments a process started ahead is given: the
// binary's main recognises them (IsChild) and calls Await.
var ChildArgs = []string{"plugin", "standby"}

// IsChild reports whether args (without the program name) are ChildArgs.
func IsChild(args []string) bool {
	return len(args) == len(ChildArgs) && args[0] == ChildArgs[0] && args[1] == ChildArgs[1]
}

// ErrNotNeeded is Await's error when the host ended without taking the
// process: it should exit quietly.
var ErrNotNeeded = errors.New("the host did not need this process")

// ErrGone is Process.Start's error when the process ended before it was
// told what to run: the caller can start the command itself.
var ErrGone = errors.New("the process started ahead has ended")

// Error is an error of starting a process ahead or of talking to one.
type Error struct {
	// Op is what failed, e.g. "socketpair" or "reading the start message".
	Op string
	// Err is what went wrong; Cause, when set, is the system's error
	// behind it.
	Err   error
	Cause error
}

func (e *Error) Error() string {
	s := "standby process: " + e.Op + ": " + e.Err.Error()
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// EnvSwitch names the environment variable that turns starting ahead off
// when set to "off".
const EnvSwitch = "SLUICE_STANDBY"

// maxAhead bounds the processes started ahead for one command.
const maxAhead = 4

// wanted says how many processes to start ahead for a command line args
// (without the program name).
func wanted(args []string) int {
	if len(args) < 2 || os.Getenv(EnvSwitch) == "off" {
		return 0
	}
	rest := args[1:]
	for _, a := range rest {
		name, value, _ := cut(a, '=')
		switch name {
		case "--in-process", "--skip-unchanged", "--print-pipeline":
			// Flags that take no plugin process, or may take none.
			if value == "" || value == "true" {
				return 0
			}
		case "-h", "--help":
			return 0
		}
	}
	switch args[0] {
	case "run", "plan":
		return min(formatsOf(firstPath(rest)), maxAhead)
	case "convert":
		return convertGuess(rest)
	}
	return 0
}

// The package does without path/filepath, fmt and strings: Go initialises
// packages in the order of their import paths among those whose imports
// are done, and those three come after a hundred others in sluice's binary.
// Its own init runs about 5 ms into the process, rather than at 16-22 ms.

// cut is strings.Cut with a separator of one byte.
func cut(s string, sep byte) (before, after string, found bool) {
	if i := bytes.IndexByte([]byte(s), sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// isFlag reports whether a command-line argument is a flag.
func isFlag(a string) bool { return len(a) > 0 && a[0] == '-' }

// hasSuffix is strings.HasSuffix.
func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// lastIndexByte is strings.LastIndexByte.
func lastIndexByte(s string, c byte) int {
	return bytes.LastIndexByte([]byte(s), c)
}

// firstPath is the first argument that is not a flag and names a file or
// directory: a pipeline. A flag's value that happens to name one is taken
// for it, which costs at most a process started for nothing.
func firstPath(args []string) string {
	for _, a := range args {
		if a == "--" || isFlag(a) {
			continue
		}
		if _, err := os.Stat(a); err == nil {
			return a
		}
	}
	return ""
}

// maxPipelineFile bounds what formatsOf reads of one pipeline file.
const maxPipelineFile = 1 << 20

// formatsOf counts the distinct types of the source and sink blocks of the
// pipeline at path (a file, or a directory of *.hcl files as
// core/pipeline reads it): a built-in plugin serves the sources and sinks
// of one format. It reads lines, not HCL: a block written otherwise (its
// type on the next line) is not counted, which only means that its plugin
// starts when the host launches it.
func formatsOf(path string) int {
	if path == "" {
		return 0
	}
	files := []string{path}
	if fi, err := os.Stat(path); err != nil {
		return 0
	} else if fi.IsDir() {
		entries, _ := os.ReadDir(path)
		files = files[:0]
		for _, e := range entries {
			name := e.Name()
			if hasSuffix(name, ".hcl") && !hasSuffix(name, ".sluicevars.hcl") && name[0] != '.' {
				files = append(files, path+string(os.PathSeparator)+name)
			}
		}
	}
	types := map[string]bool{}
	for _, f := range files {
		for _, t := range blockTypes(readHead(f, maxPipelineFile)) {
			types[t] = true
		}
	}
	return len(types)
}

// readHead returns up to max bytes from the start of the file at path.
func readHead(path string, max int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	buf := make([]byte, min(fi.Size(), int64(max)))
	n, _ := f.ReadAt(buf, 0)
	return buf[:n]
}

// blockTypes returns the type labels of the lines that open a source or
// sink block (`source "safetensors" "hf" {`), in order, with repeats.
func blockTypes(src []byte) []string {
	var types []string
	for line := range bytes.Lines(src) {
		f := bytes.Fields(line)
		if len(f) < 2 || !(string(f[0]) == "source" || string(f[0]) == "sink") {
			continue
		}
		label := f[1]
		if len(label) >= 2 && label[0] == '"' && label[len(label)-1] == '"' {
			types = append(types, string(label[1:len(label)-1]))
		}
	}
	return types
}

// convertGuess says how many formats `convert IN OUT` involves: one when
// both paths end in the same extension (a directory reads as safetensors,
// a Hugging Face checkpoint), else two. IN is the first argument that is
// not a flag and names a file or directory, OUT the next that is not a flag.
func convertGuess(args []string) int {
	in, out := "", ""
	for _, a := range args {
		switch {
		case isFlag(a):
		case in == "":
			if _, err := os.Stat(a); err == nil {
				in = a
			}
		case out == "":
			out = a
		}
	}
	if in == "" || out == "" {
		return 1
	}
	ext := func(p string) string {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return ".safetensors"
		}
		name := p[lastIndexByte(p, os.PathSeparator)+1:]
		if i := lastIndexByte(name, '.'); i >= 0 {
			return string(bytes.ToLower([]byte(name[i:])))
		}
		return ""
	}
	if ext(in) == ext(out) {
		return 1
	}
	return 2
}
