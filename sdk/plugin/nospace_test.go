package plugin

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
)

// TestNoSpaceCrossesTheProtocol: a full disk in a plugin reaches the host as
// a *atomicfile.NoSpaceError naming the output (not the temporary file the
// write failed on) with the bytes needed when the plugin knew them.
func TestNoSpaceCrossesTheProtocol(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		path   string
		needed int64
		errno  syscall.Errno
	}{
		"reservation": {&atomicfile.NoSpaceError{Path: "/o/m.gguf", Needed: 1234, Err: syscall.ENOSPC}, "/o/m.gguf", 1234, syscall.ENOSPC},
		"write": {fmt.Errorf("writing tensor w: %w", &os.PathError{Op: "write", Path: "/o/.m.gguf.sluice-tmp-1-2", Err: syscall.ENOSPC}),
			"/o/m.gguf", 0, syscall.ENOSPC},
		"file size limit": {&os.PathError{Op: "write", Path: "/o/.m.gguf.sluice-tmp-1-2", Err: syscall.EFBIG}, "/o/m.gguf", 0, syscall.EFBIG},
	} {
		got := fromStatus(toStatus(tc.err))
		var ns *atomicfile.NoSpaceError
		if !errors.As(got, &ns) || ns.Path != tc.path || ns.Needed != tc.needed || !errors.Is(got, tc.errno) {
			t.Errorf("%s: got %#v", name, got)
		}
	}
}
