//go:build linux

package plugin

import (
	"os"
	"sync"
)

// doneNotifier is an output that says when it is committed or aborted
// (*atomicfile.File).
type doneNotifier interface{ OnDone(func()) }

// keptSources is how many source files each output keeps open. A sink
// receives a source's tensors together, so one would do; two keep the
// file of the tensors before open across a boundary between two sources.
const keptSources = 2

// outputSources keeps, for each output that writes file references, the
// last keptSources source files it copied from open until the output is
// committed or aborted. A model of many small tensors otherwise opened and
// closed its checkpoint once per tensor: 12 of the 65 µs a tensor of 16 KiB
// took. Copies name their offsets, so writers of one output share a file.
var outputSources = struct {
	mu   sync.Mutex
	byOf map[OutputFile]*sourceFiles
}{byOf: map[OutputFile]*sourceFiles{}}

// sourceFiles are the source files one output keeps open.
type sourceFiles struct {
	mu    sync.Mutex
	files []*sourceFile // most recently used last
	done  bool          // the output ended: close each file when its last copy does
}

type sourceFile struct {
	path  string
	f     *os.File
	users int
}

// openSource returns path open for reading and the function to call when
// the copy from it is over. For an output that says when it ends, the file
// stays open for the next copies until then.
func openSource(dst OutputFile, path string) (*os.File, func(), error) {
	n, ok := dst.(doneNotifier)
	if !ok {
		return openAlone(path)
	}
	outputSources.mu.Lock()
	fs := outputSources.byOf[dst]
	if fs == nil {
		fs = &sourceFiles{}
		outputSources.byOf[dst] = fs
		outputSources.mu.Unlock()
		n.OnDone(func() { fs.end(dst) })
	} else {
		outputSources.mu.Unlock()
	}
	return fs.open(path)
}

// openAlone opens path for one copy.
func openAlone(path string) (*os.File, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

func (fs *sourceFiles) open(path string) (*os.File, func(), error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.done {
		return openAlone(path)
	}
	var s *sourceFile
	for i, kept := range fs.files {
		if kept.path == path {
			s = kept
			fs.files = append(append(fs.files[:i:i], fs.files[i+1:]...), s)
			break
		}
	}
	if s == nil {
		if len(fs.files) == keptSources {
			if fs.files[0].users > 0 { // the oldest is in use: copy alone
				return openAlone(path)
			}
			fs.files[0].f.Close()
			fs.files = fs.files[1:]
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		s = &sourceFile{path: path, f: f}
		fs.files = append(fs.files, s)
	}
	s.users++
	return s.f, func() { fs.release(s) }, nil
}

func (fs *sourceFiles) release(s *sourceFile) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s.users--
	if fs.done && s.users == 0 {
		s.f.Close()
	}
}

// end closes the files no copy uses, and has the others closed when their
// copies end; later copies for dst open their files alone.
func (fs *sourceFiles) end(dst OutputFile) {
	outputSources.mu.Lock()
	delete(outputSources.byOf, dst)
	outputSources.mu.Unlock()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.done = true
	for _, s := range fs.files {
		if s.users == 0 {
			s.f.Close()
		}
	}
	fs.files = nil
}
